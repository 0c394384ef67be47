"""SES events through the local stack over HTTP, wired as in AWS: every mail names the configuration set
(`/_local/sent-emails` shows it with the mail's Reply-To, headers and tags), and `/_local/ses/events` puts
SES's event on the default bus, whose rule routes it to the task_lifecycle queue and function. A bulk email
to three leads, one Permanent bounce and one complaint: both addresses are suppressed (the 1:1 send gets 403
LEAD_CHANNEL_BLOCKED, the consent ledger says why), the mails show their delivery status, and a replayed
event changes nothing."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def _org(stack: LocalStackClient) -> tuple[str, str]:
    demo = stack.new_organization()
    return demo["organizationId"], demo["users"]["coach"]["token"]


def _lead(stack: LocalStackClient, org: str, token: str, name: str, email: str) -> dict[str, Any]:
    reply = stack.request("POST", f"/organizations/{org}/leads", token=token, json_body={"name": name, "email": email})
    assert reply.status == 201, reply.body
    return reply.json()["data"]


def _inject(stack: LocalStackClient, body: dict[str, Any], status: int = 202) -> dict[str, Any]:
    reply = stack.request("POST", "/_local/ses/events", json_body=body)
    assert reply.status == status, reply.body
    return reply.json()


def _consent(stack: LocalStackClient, org: str, token: str, lead: dict[str, Any]) -> dict[str, Any]:
    reply = stack.request("GET", f"/organizations/{org}/leads/{lead['id']}/consent", token=token)
    assert reply.status == 200, reply.body
    return reply.json()["data"]


def _recipients(stack: LocalStackClient, org: str, token: str, job_id: str) -> dict[str, dict[str, Any]]:
    reply = stack.request("GET", f"/organizations/{org}/bulk-emails/{job_id}/recipients", token=token)
    assert reply.status == 200, reply.body
    return {r["leadId"]: r for r in reply.json()["data"]}


def test_a_bounce_and_a_complaint_suppress_their_addresses_and_a_replay_changes_nothing(
    local_stack: LocalStackClient,
) -> None:
    org, coach = _org(local_stack)
    run = uuid.uuid4().hex[:8]
    addresses = [f"{name}-{run}@example.com" for name in ("dana", "avi", "noa")]
    leads = [_lead(local_stack, org, coach, name, a) for name, a in zip(("Dana", "Avi", "Noa"), addresses, strict=True)]
    dana, avi, noa = leads

    created = local_stack.request(
        "POST",
        f"/organizations/{org}/bulk-emails",
        token=coach,
        json_body={"subject": "Open house", "body": "Come!", "audience": {"leadIds": [x["id"] for x in leads]}},
    )
    assert created.status == 202, created.body
    job_id = created.json()["data"]["id"]
    local_stack.request("POST", "/_local/tick", json_body={"job": "bulk_email"})
    local_stack.wait_until_idle()

    mails = {m["to"][0]: m for m in local_stack.sent_emails() if m["to"] and m["to"][0] in addresses}
    assert set(mails) == set(addresses)
    for mail in mails.values():
        assert mail["configurationSet"] == "leadcrm-local"
        assert mail["tags"]["leadcrm-mail"].startswith("b_")
        assert mail["replyTo"].startswith("contact+ol-")
        assert mail["headers"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"

    permanent = {"messageId": mails[addresses[0]]["messageId"], "type": "bounce", "bounceType": "Permanent"}
    bounce = _inject(local_stack, permanent)
    _inject(local_stack, {"messageId": mails[addresses[1]]["messageId"], "type": "complaint"})
    _inject(local_stack, {"messageId": mails[addresses[2]]["messageId"], "type": "delivery"})
    local_stack.wait_until_idle()
    assert bounce["data"]["detailType"] == "Email Bounced"
    assert bounce["data"]["detail"]["bounce"]["bounceType"] == "Permanent"

    recipients = _recipients(local_stack, org, coach, job_id)
    assert [recipients[x["id"]]["deliveryStatus"] for x in leads] == ["bounced", "complained", "delivered"]

    for lead, basis in ((dana, "bounce"), (avi, "complaint")):
        refused = local_stack.request(
            "POST", f"/organizations/{org}/conversations", token=coach, json_body={"leadId": lead["id"], "body": "Hi?"}
        )
        assert refused.status == 403, refused.body
        assert refused.json()["error"]["code"] == "LEAD_CHANNEL_BLOCKED"
        consent = _consent(local_stack, org, coach, lead)
        [email] = [c for c in consent["channels"] if c["channel"] == "email"]
        assert (email["allowed"], email["legalBasis"], email["source"]) == (False, basis, f"ses_{basis}")
        assert consent["history"][0]["legalBasis"] == basis
    assert _consent(local_stack, org, coach, noa)["channels"][0]["allowed"] is True

    # The same event again (same mail, type and timestamp: SES's own identity of an event) changes nothing.
    before = (_recipients(local_stack, org, coach, job_id), _consent(local_stack, org, coach, dana))
    replay = {
        "messageId": mails[addresses[0]]["messageId"],
        "type": "bounce",
        "bounceType": "Permanent",
        "timestamp": bounce["data"]["detail"]["bounce"]["timestamp"],
    }
    _inject(local_stack, replay)
    local_stack.wait_until_idle()
    assert (_recipients(local_stack, org, coach, job_id), _consent(local_stack, org, coach, dana)) == before
    job = local_stack.request("GET", f"/organizations/{org}/bulk-emails/{job_id}", token=coach).json()["data"]
    assert job["delivery"]["bounced"] == 1 and job["delivery"]["complained"] == 1 and job["status"] == "done"


def test_a_1_1_message_shows_what_ses_said_about_it(local_stack: LocalStackClient) -> None:
    org, coach = _org(local_stack)
    address = f"maya-{uuid.uuid4().hex[:8]}@example.com"
    lead = _lead(local_stack, org, coach, "Maya", address)
    sent = local_stack.request(
        "POST", f"/organizations/{org}/conversations", token=coach, json_body={"leadId": lead["id"], "body": "Hello"}
    )
    assert sent.status == 201, sent.body
    message, conversation = sent.json()["data"]["message"], sent.json()["data"]["conversation"]
    [mail] = [m for m in local_stack.sent_emails() if address in m["to"]]
    assert mail["messageId"] == message["providerMessageId"] and mail["configurationSet"] == "leadcrm-local"
    assert mail["tags"]["leadcrm-mail"] == f"m_{uuid.UUID(message['id']).hex}"

    _inject(local_stack, {"messageId": mail["messageId"], "type": "deliveryDelay"})
    local_stack.wait_until_idle()
    _inject(local_stack, {"messageId": mail["messageId"], "type": "delivery"})
    local_stack.wait_until_idle()
    thread = f"/organizations/{org}/conversations/{conversation['id']}"
    listed = local_stack.request("GET", f"{thread}/messages", token=coach)
    [shown] = listed.json()["data"]
    assert (shown["status"], shown["deliveryStatus"]) == ("sent", "delivered")
    # a transient bounce records status only: the lead may still be mailed
    _inject(local_stack, {"messageId": mail["messageId"], "type": "bounce", "bounceType": "Transient"})
    local_stack.wait_until_idle()
    assert _consent(local_stack, org, coach, lead)["channels"][0]["allowed"] is True


def test_sent_emails_are_paged_and_bad_injections_are_refused(local_stack: LocalStackClient) -> None:
    org, coach = _org(local_stack)
    for i in range(2):
        lead = _lead(local_stack, org, coach, f"P{i}", f"page-{i}-{uuid.uuid4().hex[:6]}@example.com")
        sent = local_stack.request(
            "POST", f"/organizations/{org}/conversations", token=coach, json_body={"leadId": lead["id"], "body": "x"}
        )
        assert sent.status == 201, sent.body
    first = local_stack.request("GET", "/_local/sent-emails?limit=1").json()
    assert len(first["data"]) == 1 and first["nextCursor"]
    second = local_stack.request("GET", f"/_local/sent-emails?limit=1&cursor={first['nextCursor']}").json()
    assert second["data"][0]["messageId"] != first["data"][0]["messageId"]
    for query, code in (("?limit=0", "VALIDATION_FAILED"), ("?cursor=nope", "INVALID_CURSOR")):
        refused = local_stack.request("GET", f"/_local/sent-emails{query}")
        assert (refused.status, refused.json()["error"]["code"]) == (400, code)

    message_id = first["data"][0]["messageId"]
    unknown = _inject(local_stack, {"messageId": "no-such-mail", "type": "bounce"}, 404)
    assert unknown["error"]["code"] == "MESSAGE_NOT_FOUND"
    for body in (
        {"messageId": message_id, "type": "open"},
        {"messageId": message_id, "type": "delivery", "bounceType": "Permanent"},
        {"messageId": message_id, "type": "bounce", "bounceType": "Soft"},
        {"messageId": message_id, "type": "bounce", "timestamp": "yesterday"},
        {"messageId": message_id, "type": "bounce", "extra": 1},
        {"type": "bounce"},
    ):
        assert _inject(local_stack, body, 400)["error"]["code"] == "VALIDATION_FAILED", body
