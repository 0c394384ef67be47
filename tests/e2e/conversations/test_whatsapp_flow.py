"""WhatsApp conversations through the local stack, wired as in AWS: Meta's signed webhooks reach the receiver
(`/webhooks/whatsapp`) and the ingestion function; a send goes from the API to graph_fetch (outside the VPC)
and the local Cloud API (`GET /_local/whatsapp/sent`); the clock (`/_local/clock`) closes the 24-hour window."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

LOCAL_APP_SECRET = "local-app-secret"  # the local stack's default META_APP_SECRET
BUSINESS_ACCOUNT = "102290129340398"


def _digits(n: int = 15) -> str:
    return str(uuid.uuid4().int)[:n]


def _signed_webhook(stack: LocalStackClient, value: dict[str, Any]) -> None:
    payload = {
        "object": "whatsapp_business_account",
        "entry": [{"id": BUSINESS_ACCOUNT, "changes": [{"field": "messages", "value": value}]}],
    }
    raw = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(LOCAL_APP_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    answer = stack.request(
        "POST",
        "/webhooks/whatsapp",
        raw=raw,
        headers={"content-type": "application/json", "x-hub-signature-256": signature},
    )
    assert answer.status == 200, answer.body
    stack.wait_until_idle()


def _lead_writes(stack: LocalStackClient, number: str, wa_id: str, text: str) -> None:
    _signed_webhook(
        stack,
        {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881", "phone_number_id": number},
            "contacts": [{"profile": {"name": "Grace"}, "wa_id": wa_id}],
            "messages": [
                {
                    "from": wa_id,
                    "id": f"wamid.{uuid.uuid4().hex}",
                    "timestamp": str(int(time.time())),
                    "type": "text",
                    "text": {"body": text},
                }
            ],
        },
    )


def _status(stack: LocalStackClient, number: str, wamid: str, status: str) -> None:
    _signed_webhook(
        stack,
        {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881", "phone_number_id": number},
            "statuses": [{"id": wamid, "status": status, "timestamp": str(int(time.time())), "recipient_id": "1"}],
        },
    )


def _sent_to(stack: LocalStackClient, wa_id: str) -> list[dict[str, Any]]:
    return [m for m in stack.request("GET", "/_local/whatsapp/sent").json()["data"] if m["to"] == wa_id]


def test_a_lead_writes_staff_answer_in_the_window_and_after_it_only_a_template_goes_out(local_clock: LocalStackClient):
    stack = local_clock
    demo = stack.new_organization()
    org, owner, coach = demo["organizationId"], demo["users"]["owner"]["token"], demo["users"]["coach"]["token"]
    number, wa_id = _digits(), "4477" + _digits(8)
    connected = stack.request(
        "POST",
        f"/organizations/{org}/integrations/whatsapp",
        token=owner,
        json_body={"phoneNumberId": number, "accessToken": "EAAG-local-number-token"},
    )
    assert connected.status == 201, connected.body
    lead = stack.request(
        "POST", f"/organizations/{org}/leads", token=coach, json_body={"name": "Grace Hopper", "phone": f"+{wa_id}"}
    ).json()["data"]

    # The lead writes on WhatsApp: the message lands in its thread, unread.
    _lead_writes(stack, number, wa_id, "Is there a class tonight?")
    (thread,) = stack.request(
        "GET", f"/organizations/{org}/conversations?leadId={lead['id']}&channel=whatsapp", token=coach
    ).json()["data"]
    assert thread["unreadCount"] == 1
    path = f"/organizations/{org}/conversations/{thread['id']}"
    messages = stack.request("GET", f"{path}/messages", token=coach).json()["data"]
    assert [(m["direction"], m["body"]) for m in messages] == [("inbound", "Is there a class tonight?")]

    # Staff answer within the window: it goes out through the connected number, then delivered and read.
    answer = stack.request("POST", f"{path}/whatsapp-messages", token=coach, json_body={"text": "Yes, 18:00!"})
    assert answer.status == 201, answer.body
    stack.wait_until_idle()
    (sent,) = _sent_to(stack, wa_id)
    assert (sent["phoneNumberId"], sent["text"]) == (number, "Yes, 18:00!")
    _status(stack, number, sent["wamid"], "delivered")
    _status(stack, number, sent["wamid"], "read")
    messages = stack.request("GET", f"{path}/messages", token=coach).json()["data"]
    assert (messages[0]["status"], messages[0]["providerMessageId"], messages[0]["deliveryStatus"]) == (
        "sent",
        sent["wamid"],
        "read",
    )

    # After the window, free-form text is refused and an approved template goes out.
    stack.request(
        "POST",
        "/_local/whatsapp/templates",
        json_body={
            "businessAccountId": BUSINESS_ACCOUNT,
            "templates": [
                {
                    "name": "class_reminder",
                    "language": "en_US",
                    "status": "APPROVED",
                    "category": "UTILITY",
                    "components": [{"type": "BODY", "text": "Hi {{1}}, we kept a spot for you on {{2}}."}],
                }
            ],
        },
    )
    synced = stack.request(
        "POST",
        f"/organizations/{org}/whatsapp-templates/sync",
        token=owner,
        json_body={"businessAccountId": BUSINESS_ACCOUNT},
    )
    assert synced.status == 202, synced.body
    stack.wait_until_idle()
    stack.request("POST", "/_local/clock", json_body={"advance": "PT25H"})

    refused = stack.request("POST", f"{path}/whatsapp-messages", token=coach, json_body={"text": "Still coming?"})
    assert refused.status == 409
    assert refused.json()["error"]["code"] == "WHATSAPP_WINDOW_CLOSED"
    assert refused.json()["error"]["closedAt"] is not None
    template = {"name": "class_reminder", "language": "en_US", "parameters": ["Grace", "Thursday"]}
    answer = stack.request("POST", f"{path}/whatsapp-messages", token=coach, json_body={"template": template})
    assert answer.status == 201, answer.body
    stack.wait_until_idle()
    assert [m["type"] for m in _sent_to(stack, wa_id)] == ["text", "template"]
    newest = stack.request("GET", f"{path}/messages", token=coach).json()["data"][0]
    assert (newest["status"], newest["body"]) == ("sent", "Hi Grace, we kept a spot for you on Thursday.")
