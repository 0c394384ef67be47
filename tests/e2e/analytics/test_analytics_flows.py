"""Attribution and analytics through the local stack: a form with UTM parameters, a message from the lead
delivered over the bus as conversations emits it, a purchase, and the reports that read them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def test_a_form_lead_with_utm_a_whatsapp_message_and_a_purchase_show_up_in_every_report(
    local_stack: LocalStackClient,
) -> None:
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    utm = {"source": "instagram", "medium": "paid", "campaign": "summer"}
    captured = local_stack.capture(org, {"name": "Maya Katz", "email": "maya@example.com", "utm": utm})
    assert captured.status == 201
    lead_id = local_stack.request("GET", f"/organizations/{org}/leads?search=maya", token=owner).json()["data"][0]["id"]

    inbound = local_stack.request(
        "POST",
        "/_local/events",
        json_body={
            "source": "leadcrm",
            "detailType": "conversation.inbound_received",
            "detail": {
                "eventId": str(uuid.uuid4()),
                "type": "conversation.inbound_received",
                "organizationId": org,
                "aggregateId": str(uuid.uuid4()),
                "occurredAt": datetime.now(UTC).isoformat(),
                "payload": {
                    "organizationId": org,
                    "conversationId": str(uuid.uuid4()),
                    "leadId": lead_id,
                    "messageId": str(uuid.uuid4()),
                    "channel": "whatsapp",
                },
            },
        },
    )
    assert inbound.status == 202, inbound.body
    bought = local_stack.request(
        "PATCH", f"/organizations/{org}/leads/{lead_id}", token=owner, json_body={"status": "customer"}
    )
    assert bought.status == 200, bought.body
    local_stack.wait_until_idle()

    touches = local_stack.request("GET", f"/organizations/{org}/leads/{lead_id}/attribution", token=owner).json()
    assert touches["data"]["firstTouch"]["utm"] == {**utm, "term": None, "content": None}
    assert [(t["kind"], t["channel"]) for t in touches["data"]["touches"]] == [
        ("form", "instagram"),
        ("message", "whatsapp"),
    ]
    overview = local_stack.request("GET", f"/organizations/{org}/leads/analytics", token=owner).json()["data"]
    assert (overview["total"], overview["wins"], overview["conversionRate"]) == (1, 1, 100)
    report = local_stack.request("GET", f"/organizations/{org}/leads/analytics/campaigns", token=owner).json()["data"]
    assert report["channels"] == [{"channel": "instagram", "label": "instagram", "acquired": 1, "customers": 1}]
