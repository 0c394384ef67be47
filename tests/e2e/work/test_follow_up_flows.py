"""Follow-ups, returns and the morning digest through the local stack: the bus, the queues and the
scheduler wired as in AWS."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def _zone_where_it_is_eight_in_the_morning() -> str:
    # Zones run from UTC-12 to UTC+14: 8 - hour taken mod 24 into [-9, +14] always names one that exists
    # (between 21:00 and 21:59 UTC, 8 - hour = -13 named Etc/GMT+13, which does not).
    offset = (8 - datetime.now(UTC).hour) % 24
    offset = offset - 24 if offset > 14 else offset
    return "UTC" if offset == 0 else f"Etc/GMT{'-' if offset > 0 else '+'}{abs(offset)}"  # POSIX sign is inverted


def _tasks(stack: LocalStackClient, org: str, token: str, lead_id: str) -> list[dict[str, Any]]:
    reply = stack.request("GET", f"/organizations/{org}/tasks?leadId={lead_id}&status=all", token=token)
    assert reply.status == 200, reply.body
    return reply.json()["data"]


def test_a_lost_lead_that_comes_back_through_the_form_is_reopened_with_a_return_call_task(
    local_stack: LocalStackClient,
) -> None:
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    lead = local_stack.request(
        "POST", f"/organizations/{org}/leads", token=owner, json_body={"name": "Avi Levi", "email": "avi@example.com"}
    ).json()["data"]
    lost = local_stack.request(
        "PATCH",
        f"/organizations/{org}/leads/{lead['id']}",
        token=owner,
        json_body={"status": "lost", "lostReason": "price"},
    )
    assert lost.status == 200
    local_stack.wait_until_idle()
    assert all(t["status"] == "cancelled" for t in _tasks(local_stack, org, owner, lead["id"]))

    came_back = local_stack.capture(org, {"name": "Avi", "email": "AVI@example.com", "note": "Still on?"})
    local_stack.wait_until_idle()

    assert came_back.status == 201
    detail = local_stack.request("GET", f"/organizations/{org}/leads/{lead['id']}", token=owner).json()["data"]
    assert detail["status"] == "new"
    assert detail["timeline"][0]["type"] in {"lead_returned", "owner_changed", "stage_moved"}
    open_tasks = [t for t in _tasks(local_stack, org, owner, lead["id"]) if t["status"] == "pending"]
    assert len(open_tasks) == 1 and open_tasks[0]["type"] == "contact_lead"


def test_the_morning_digest_mails_a_staff_member_with_an_overdue_follow_up_once(local_stack: LocalStackClient) -> None:
    demo = local_stack.request(
        "POST",
        "/_local/orgs",
        json_body={"name": "Digest Studio", "timezone": _zone_where_it_is_eight_in_the_morning()},
    ).json()["data"]
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    lead_id = local_stack.request(
        "POST", f"/organizations/{org}/leads", token=owner, json_body={"name": "Rina"}
    ).json()["data"]["id"]
    yesterday = datetime.fromtimestamp(time.time() - 86400, UTC).isoformat()
    assert (
        local_stack.request(
            "PUT",
            f"/organizations/{org}/leads/{lead_id}/follow-up",
            token=owner,
            json_body={"at": yesterday, "type": "call"},
        ).status
        == 200
    )

    local_stack.request("POST", "/_local/tick", json_body={"job": "daily_digest"})
    local_stack.request("POST", "/_local/tick", json_body={"job": "daily_digest"})

    mails = [m for m in local_stack.sent_emails() if "Digest Studio" in m["subject"]]
    assert len(mails) == 1
    assert "Overdue tasks: 1" in mails[0]["text"]
