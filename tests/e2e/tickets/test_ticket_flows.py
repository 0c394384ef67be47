"""A helpdesk ticket through the local stack: routed by a rule, worked to resolved, the confirmation mailed by
the scheduled sweep through SES, closed, and the survey answered once through its public link."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def test_a_routed_ticket_is_resolved_confirmed_and_surveyed(local_stack: LocalStackClient) -> None:
    demo = local_stack.request("POST", "/_local/orgs", json_body={"name": "Helpdesk Studio"}).json()["data"]
    org = demo["organizationId"]
    owner, coach = demo["users"]["owner"]["token"], demo["users"]["coach"]["token"]
    coach_id = demo["users"]["coach"]["userId"]
    lead = local_stack.request(
        "POST", f"/organizations/{org}/leads", token=coach, json_body={"name": "Noa", "email": "noa@example.com"}
    ).json()["data"]
    queue = local_stack.request(
        "POST", f"/organizations/{org}/ticket-queues", token=owner, json_body={"name": "Billing"}
    ).json()["data"]
    rule = local_stack.request(
        "POST",
        f"/organizations/{org}/ticket-routing-rules",
        token=owner,
        json_body={"name": "Refunds", "keywords": ["refund"], "queueId": queue["id"], "assigneeUserId": coach_id},
    )
    assert rule.status == 201, rule.body

    opened = local_stack.request(
        "POST",
        f"/organizations/{org}/tickets",
        token=coach,
        json_body={"subject": "Refund for March", "leadId": lead["id"], "channel": "phone"},
    )
    assert opened.status == 201, opened.body
    ticket = opened.json()["data"]
    assert (ticket["status"], ticket["queueId"], ticket["assigneeUserId"]) == ("assigned", queue["id"], coach_id)

    base = f"/organizations/{org}/tickets/{ticket['id']}"
    assert local_stack.request("POST", f"{base}/respond", token=coach, json_body={}).json()["data"]["status"] == (
        "in_progress"
    )
    resolved = local_stack.request("POST", f"{base}/resolve", token=coach, json_body={"resolution": "Refunded."})
    assert resolved.json()["data"]["status"] == "resolved"
    local_stack.request("POST", "/_local/tick", json_body={"job": "ticket_sweep"})

    def mails() -> list[dict]:
        return [
            m for m in local_stack.sent_emails() if "noa@example.com" in m["to"]
        ]

    [confirmation] = mails()
    assert confirmation["subject"] == "[#1] Resolved: Refund for March" and "Refunded." in confirmation["text"]

    closed = local_stack.request("POST", f"{base}/confirm", token=coach)
    assert closed.json()["data"]["status"] == "closed"
    local_stack.request("POST", "/_local/tick", json_body={"job": "ticket_sweep"})
    survey = mails()[-1]
    [link] = [line for line in survey["text"].splitlines() if "/public/ticket-surveys/" in line]
    path = urlparse(link.strip()).path

    assert local_stack.request("GET", path).json()["data"]["answered"] is False
    assert local_stack.request("POST", path, json_body={"rating": 5}).status == 201
    again = local_stack.request("POST", path, json_body={"rating": 1})
    assert (again.status, again.json()["error"]["code"]) == (409, "SURVEY_ALREADY_ANSWERED")
