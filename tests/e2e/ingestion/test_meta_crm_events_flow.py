"""Conversions API for CRM through `make dev`'s stack: an owner turns CRM events on for a connected page, a Meta
lead arrives, is moved new → contacted → converted, and Meta's stand-in (`GET /_local/meta/events`) received
three CRM events in that order, each with the leadgen id; the lead's timeline shows what was sent and Meta's
answer; a redelivered status change sends nothing more."""

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


def _digits() -> str:
    return str(uuid.uuid4().int)[:15]


def _signed_post(stack: LocalStackClient, payload: dict) -> int:
    raw = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(LOCAL_APP_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    headers = {"content-type": "application/json", "x-hub-signature-256": signature}
    return stack.request("POST", "/webhooks/meta/leadgen", raw=raw, headers=headers).status


def _events_of(stack: LocalStackClient, dataset_id: str) -> list[dict[str, Any]]:
    recorded = stack.request("GET", "/_local/meta/events").json()["data"]
    return [r["event"] for r in recorded if r["datasetId"] == dataset_id]


def _wait_for_events(stack: LocalStackClient, dataset_id: str, count: int) -> list[dict[str, Any]]:
    """The chain is three hops (task_lifecycle twice, then meta_events, then ingestion): idle between them."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        stack.wait_until_idle()
        events = _events_of(stack, dataset_id)
        if len(events) >= count:
            return events
        time.sleep(0.2)
    return _events_of(stack, dataset_id)


def test_a_meta_lead_moved_new_contacted_converted_sends_three_crm_events_in_order(local_stack: LocalStackClient):
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    page_id, leadgen_id, dataset_id = _digits(), _digits(), _digits()
    connection = local_stack.request(
        "POST",
        f"/organizations/{org}/integrations/meta",
        token=owner,
        json_body={"pageId": page_id, "accessToken": "EAA-local-page-token"},
    ).json()["data"]
    configured = local_stack.request(
        "PUT",
        f"/organizations/{org}/integrations/meta/{connection['id']}/crm-events",
        token=owner,
        json_body={"datasetId": dataset_id, "enabled": True},
    )
    assert configured.status == 200, configured.body
    email = f"noa-{leadgen_id}@example.com"
    lead = {"id": leadgen_id, "field_data": [{"name": "full_name", "values": ["Noa Levi"]},
                                             {"name": "email", "values": [email]}], "platform": "fb"}  # fmt: skip
    assert local_stack.request("POST", "/_local/graph/leads", json_body=lead).status == 201
    change = {"field": "leadgen", "value": {"leadgen_id": leadgen_id, "page_id": page_id}}
    assert _signed_post(local_stack, {"object": "page", "entry": [{"id": page_id, "changes": [change]}]}) == 200
    local_stack.wait_until_idle()
    lead_id = local_stack.request("GET", f"/organizations/{org}/leads", token=owner).json()["data"][0]["id"]

    moved = local_stack.request(
        "PATCH", f"/organizations/{org}/leads/{lead_id}", token=owner, json_body={"status": "contacted"}
    )
    assert moved.status == 200, moved.body
    local_stack.wait_until_idle()
    converted = local_stack.request(
        "POST",
        f"/organizations/{org}/leads/{lead_id}/convert",
        token=owner,
        json_body={"firstName": "Noa", "email": email},
    )
    assert converted.status in (200, 201), converted.body
    events = _wait_for_events(local_stack, dataset_id, 3)

    assert [e["event_name"] for e in events] == ["New", "Contacted", "Converted"]
    assert [e["user_data"]["lead_id"] for e in events] == [int(leadgen_id)] * 3
    assert {e["action_source"] for e in events} == {"system_generated"}
    assert {json.dumps(e["custom_data"], sort_keys=True) for e in events} == {
        json.dumps({"event_source": "crm", "lead_event_source": "LeadCRM"}, sort_keys=True)
    }
    assert all("em" not in e["user_data"] for e in events)  # hashed contact details were not allowed
    assert len({e["event_id"] for e in events}) == 3
    detail = local_stack.request("GET", f"/organizations/{org}/leads/{lead_id}", token=owner).json()["data"]
    timeline = [entry for entry in detail["timeline"] if entry["type"] == "meta_crm_event_sent"]
    assert sorted(entry["payload"]["eventName"] for entry in timeline) == ["Contacted", "Converted", "New"]
    assert {entry["payload"]["answer"]["eventsReceived"] for entry in timeline} == {1}

    # The contacted move delivered again (the same event id): Meta gets nothing more.
    contacted = events[1]
    redelivered = {
        "eventId": contacted["event_id"].removeprefix("leadcrm-"),
        "type": "lead.status_changed",
        "organizationId": org,
        "aggregateId": lead_id,
        "occurredAt": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(contacted["event_time"])),
        "payload": {"leadId": lead_id, "fromStatus": "new", "toStatus": "contacted",
                    "toStageId": next(e["toStageId"] for e in detail["timeline"]
                                      if e.get("toStatus") == "contacted" and e.get("toStageId"))},
    }  # fmt: skip
    put = local_stack.request(
        "POST", "/_local/events", json_body={"detailType": "lead.status_changed", "detail": redelivered}
    )
    assert put.status == 202, put.body
    for _ in range(2):  # its reaction's own events would be published before the consumer is idle
        local_stack.wait_until_idle()
        time.sleep(0.5)
    assert _events_of(local_stack, dataset_id) == events
