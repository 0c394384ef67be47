"""Email out and in through the local stack, wired as in AWS: the API sends through SES (moto), a reply
posted to `/_local/email` lands in the inbound bucket, whose S3 event reaches the ingestion queue and
function; bulk mail goes out through the scheduled job and its one-click unsubscribe is public."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "email"


def _reply(fixture: str, to: str) -> bytes:
    raw = (FIXTURES / fixture).read_bytes().replace(b"{{REPLY_TO}}", to.encode())
    message_id = f"<{uuid.uuid4().hex}@e2e.example>".encode()
    return re.sub(rb"(?im)^(message-id:)[^\r\n]*", lambda m: m.group(1) + b" " + message_id, raw, count=1)


def _sent_to(stack: LocalStackClient, address: str) -> list[dict[str, Any]]:
    return [m for m in stack.sent_emails() if address in str(m["to"])]


def _org(stack: LocalStackClient) -> tuple[str, str]:
    demo = stack.new_organization()
    return demo["organizationId"], demo["users"]["coach"]["token"]


def _lead(stack: LocalStackClient, org: str, token: str, email: str) -> dict[str, Any]:
    reply = stack.request(
        "POST", f"/organizations/{org}/leads", token=token, json_body={"name": "Dana", "email": email}
    )
    assert reply.status == 201, reply.body
    return reply.json()["data"]


def test_send_to_a_lead_then_their_reply_lands_in_the_thread_as_unread(local_stack: LocalStackClient) -> None:
    org, coach = _org(local_stack)
    address = f"dana-{uuid.uuid4().hex[:8]}@example.com"
    lead = _lead(local_stack, org, coach, address)
    sent = local_stack.request(
        "POST",
        f"/organizations/{org}/conversations",
        token=coach,
        json_body={"leadId": lead["id"], "subject": "Trial class", "body": "Would you like a trial class?"},
    )
    assert sent.status == 201, sent.body
    conversation = sent.json()["data"]["conversation"]
    assert sent.json()["data"]["message"]["status"] == "sent"

    [mail] = _sent_to(local_stack, address)
    assert mail["subject"] == "Trial class" and "Would you like a trial class?" in mail["text"]
    assert mail["replyTo"].startswith(f"contact+{uuid.UUID(conversation['id']).hex}.")

    delivered = local_stack.request(
        "POST", "/_local/email", raw=_reply("gmail_reply_multipart_qp.eml", mail["replyTo"])
    )
    assert delivered.status == 202
    local_stack.wait_until_idle()

    thread = local_stack.request("GET", f"/organizations/{org}/conversations/{conversation['id']}", token=coach)
    assert thread.json()["data"]["unreadCount"] == 1
    messages = local_stack.request(
        "GET", f"/organizations/{org}/conversations/{conversation['id']}/messages", token=coach
    ).json()["data"]
    assert [m["direction"] for m in messages] == ["inbound", "outbound"]
    assert messages[0]["body"] == "Hi Noa,\n\nThursday at 18:00 works for me — see you then!"
    detail = local_stack.request("GET", f"/organizations/{org}/leads/{lead['id']}", token=coach).json()["data"]
    assert detail["status"] == "contacted"
    assert [e["type"] for e in detail["timeline"] if e["kind"] == "message"] == ["message_inbound", "message_outbound"]


def test_a_forged_reply_to_signature_creates_nothing(local_stack: LocalStackClient) -> None:
    org, coach = _org(local_stack)
    address = f"avi-{uuid.uuid4().hex[:8]}@example.com"
    lead = _lead(local_stack, org, coach, address)
    local_stack.request(
        "POST", f"/organizations/{org}/conversations", token=coach, json_body={"leadId": lead["id"], "body": "Hi"}
    )
    [mail] = _sent_to(local_stack, address)
    local, _, domain = mail["replyTo"].partition("@")
    forged = f"{local[:-3]}{'xyz' if not local.endswith('xyz') else 'abc'}@{domain}"
    for target in (forged, f"contact+ol-{uuid.UUID(lead['id']).hex}.aaaaaaaaaaaaaaaa@{domain}"):
        assert (
            local_stack.request("POST", "/_local/email", raw=_reply("apple_mail_reply_plain.eml", target)).status == 202
        )
    local_stack.wait_until_idle()

    inbox = local_stack.request("GET", f"/organizations/{org}/conversations", token=coach).json()["data"]
    assert [(t["unreadCount"], t["lastMessage"]["direction"]) for t in inbox] == [(0, "outbound")]


def test_bulk_mail_goes_out_by_job_and_unsubscribes_in_one_click(local_stack: LocalStackClient) -> None:
    org, coach = _org(local_stack)
    address = f"noa-{uuid.uuid4().hex[:8]}@example.com"
    lead = _lead(local_stack, org, coach, address)
    job = local_stack.request(
        "POST",
        f"/organizations/{org}/bulk-emails",
        token=coach,
        json_body={"subject": "Open house", "body": "Friday at 18:00", "audience": {"leadIds": [lead["id"]]}},
    )
    assert job.status == 202, job.body
    assert local_stack.request("POST", "/_local/tick", json_body={"job": "bulk_email"}).status == 200
    [mail] = _sent_to(local_stack, address)
    assert mail["replyTo"].startswith(f"contact+ol-{uuid.UUID(lead['id']).hex}.")
    unsubscribe = mail["headers"]["List-Unsubscribe"].strip("<>")
    path = unsubscribe[unsubscribe.index("/unsubscribe/") :]

    clicked = local_stack.request(
        "POST", path, raw=b"List-Unsubscribe=One-Click", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert clicked.status == 200
    consent = local_stack.request("GET", f"/organizations/{org}/leads/{lead['id']}/consent", token=coach).json()["data"]
    assert next(c for c in consent["channels"] if c["channel"] == "email")["allowed"] is False

    local_stack.request("POST", "/_local/email", raw=_reply("outlook_reply_base64.eml", mail["replyTo"]))
    local_stack.wait_until_idle()
    [thread] = local_stack.request("GET", f"/organizations/{org}/conversations", token=coach).json()["data"]
    assert thread["leadId"] == lead["id"] and thread["unreadCount"] == 1
