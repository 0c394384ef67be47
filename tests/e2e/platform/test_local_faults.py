"""Faults on the local stack's stand-ins (`/_local/faults`), played over HTTP: a Graph outage while leadgen
webhooks arrive loses no lead and delivers each once it clears; a throttled SES send ends delivered; a bus
that refuses PutEvents leaves the events unpublished until it is back. Each fault is the real service's
failure, so what is tested is the product's own handling."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

LOCAL_APP_SECRET = "local-app-secret"  # the local stack's default META_APP_SECRET
REDELIVERY_SECONDS = 40  # the local queues' visibility timeout (10 s) with room to spare


@pytest.fixture(autouse=True)
def _no_fault_left(local_stack: LocalStackClient) -> Iterator[None]:
    """The stack is shared by every module of a worker: no fault outlives its test."""
    local_stack.request("DELETE", "/_local/faults")
    yield
    local_stack.request("DELETE", "/_local/faults")


def _arm(stack: LocalStackClient, **fault: Any) -> dict[str, Any]:
    reply = stack.request("POST", "/_local/faults", json_body=fault)
    assert reply.status == 201, reply.body
    return reply.json()["data"]


def _armed(stack: LocalStackClient) -> dict[str, dict[str, Any]]:
    return {f["service"]: f for f in stack.request("GET", "/_local/faults").json()["data"]}


def _digits() -> str:
    return str(uuid.uuid4().int)[:15]


def _signed_webhook(stack: LocalStackClient, page_id: str, leadgen_id: str) -> int:
    change = {"field": "leadgen", "value": {"leadgen_id": leadgen_id, "page_id": page_id}}
    raw = json.dumps({"object": "page", "entry": [{"id": page_id, "changes": [change]}]}).encode()
    signature = "sha256=" + hmac.new(LOCAL_APP_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    headers = {"content-type": "application/json", "x-hub-signature-256": signature}
    return stack.request("POST", "/webhooks/meta/leadgen", raw=raw, headers=headers).status


def _wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# -- the routes ---------------------------------------------------------------------------------------------
def test_an_armed_fault_is_listed_with_its_calls_left_and_cleared_per_service(local_stack: LocalStackClient):
    _arm(local_stack, service="graph", mode="throttle", count=3)
    _arm(local_stack, service="ses", mode="error5xx")
    assert _armed(local_stack) == {
        "graph": {"service": "graph", "mode": "throttle", "callsLeft": 3, "failuresServed": 0},
        "ses": {"service": "ses", "mode": "error5xx", "callsLeft": None, "failuresServed": 0},
    }
    cleared = local_stack.request("DELETE", "/_local/faults?service=graph").json()["data"]["cleared"]
    assert [f["service"] for f in cleared] == ["graph"] and list(_armed(local_stack)) == ["ses"]


@pytest.mark.parametrize(
    "body",
    [
        {"service": "sqs", "mode": "throttle"},
        {"service": "ses", "mode": "slow"},
        {"service": "ses", "mode": "throttle", "count": 0},
    ],
)
def test_a_body_that_names_no_fault_is_a_400_in_the_error_shape(local_stack: LocalStackClient, body):
    reply = local_stack.request("POST", "/_local/faults", json_body=body)
    assert reply.status == 400 and reply.json()["error"]["code"] == "VALIDATION_FAILED"
    assert _armed(local_stack) == {}


def test_a_graph_fault_answers_graphs_own_error(local_stack: LocalStackClient):
    _arm(local_stack, service="graph", mode="tokenExpired", count=1)
    reply = local_stack.request("GET", "/_local/graph/123", headers={"authorization": "Bearer EAA-token"})
    assert reply.status == 400
    assert (reply.json()["error"]["code"], reply.json()["error"]["error_subcode"]) == (190, 463)
    assert _armed(local_stack) == {}  # its one call is spent


# -- Graph ----------------------------------------------------------------------------------------------------
def test_a_graph_outage_loses_no_lead_and_each_is_delivered_once_when_it_clears(local_stack: LocalStackClient):
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    page_id = _digits()
    body = {"pageId": page_id, "accessToken": "EAA-local-page-token"}
    assert (
        local_stack.request("POST", f"/organizations/{org}/integrations/meta", token=owner, json_body=body).status
        == 201
    )
    names = [f"Outage Lead {n}" for n in range(3)]
    leadgen_ids = [_digits() for _ in names]
    for leadgen_id, name in zip(leadgen_ids, names, strict=True):
        lead = {"id": leadgen_id, "field_data": [{"name": "full_name", "values": [name]}], "platform": "fb"}
        assert local_stack.request("POST", "/_local/graph/leads", json_body=lead).status == 201

    _arm(local_stack, service="graph", mode="error5xx")
    for leadgen_id in leadgen_ids:
        assert _signed_webhook(local_stack, page_id, leadgen_id) == 200  # the receiver never calls Graph
    assert _signed_webhook(local_stack, page_id, leadgen_ids[0]) == 200  # and Meta retries one of them
    _wait_for(lambda: _armed(local_stack)["graph"]["failuresServed"] >= 4, 20, "graph_fetch to meet the outage")
    listed = local_stack.request("GET", f"/organizations/{org}/leads", token=owner).json()["data"]
    assert listed == []  # nothing could be read, nothing was made up

    local_stack.request("DELETE", "/_local/faults?service=graph")
    local_stack.wait_until_idle(timeout=REDELIVERY_SECONDS)  # SQS hands the failed deliveries back

    listed = local_stack.request("GET", f"/organizations/{org}/leads", token=owner).json()["data"]
    assert sorted(lead["name"] for lead in listed) == names  # every lead, each once


# -- SES ------------------------------------------------------------------------------------------------------
def _lead_with_email(stack: LocalStackClient) -> tuple[str, str, str, str]:
    demo = stack.new_organization()
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]
    address = f"fault-{uuid.uuid4().hex[:12]}@example.com"
    created = stack.request(
        "POST", f"/organizations/{org}/leads", token=coach, json_body={"name": "Noa", "email": address}
    )
    assert created.status == 201, created.body
    return org, coach, created.json()["data"]["id"], address


def _email(stack: LocalStackClient, org: str, coach: str, lead_id: str) -> dict[str, Any]:
    body = {"leadId": lead_id, "channel": "email", "subject": "Trial", "body": "See you Friday?"}
    reply = stack.request("POST", f"/organizations/{org}/conversations", token=coach, json_body=body)
    assert reply.status in (200, 201), reply.body
    return reply.json()["data"]


def _mails_to(stack: LocalStackClient, address: str) -> int:
    return sum(1 for mail in stack.sent_emails() if address in mail["to"])


def test_a_throttle_botocores_retries_absorb_sends_the_mail_once(local_stack: LocalStackClient):
    org, coach, lead_id, address = _lead_with_email(local_stack)
    _arm(local_stack, service="ses", mode="throttle", count=2)
    sent = _email(local_stack, org, coach, lead_id)
    assert sent["message"]["status"] == "sent"
    assert _mails_to(local_stack, address) == 1 and _armed(local_stack) == {}


def test_a_throttled_send_stays_queued_and_is_delivered_once_the_throttle_clears(local_stack: LocalStackClient):
    org, coach, lead_id, address = _lead_with_email(local_stack)
    _arm(local_stack, service="ses", mode="throttle", count=4)  # more than botocore's four attempts can pass
    queued = _email(local_stack, org, coach, lead_id)
    assert queued["message"]["status"] == "queued", queued["message"]["error"]
    assert queued["message"]["error"].startswith("TooManyRequests")
    assert _mails_to(local_stack, address) == 0 and _armed(local_stack) == {}  # the throttle has cleared

    assert local_stack.request("POST", "/_local/tick", json_body={"job": "queued_email_sweep"}).status == 200

    thread = queued["conversation"]["id"]
    messages = local_stack.request("GET", f"/organizations/{org}/conversations/{thread}/messages", token=coach)
    assert [m["status"] for m in messages.json()["data"]] == ["sent"]
    assert _mails_to(local_stack, address) == 1
    lead = local_stack.request("GET", f"/organizations/{org}/leads/{lead_id}", token=coach).json()["data"]
    assert lead["status"] == "contacted"


# -- EventBridge ----------------------------------------------------------------------------------------------
def _unpublished(stack: LocalStackClient) -> int:
    return int(stack.request("GET", "/_local/idle").json()["data"]["unpublishedEvents"])


def test_a_bus_outage_leaves_events_unpublished_until_it_clears_then_they_are_published(local_stack: LocalStackClient):
    local_stack.wait_until_idle()
    demo = local_stack.new_organization()
    local_stack.wait_until_idle()
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]
    _arm(local_stack, service="eventbridge", mode="error5xx")

    created = local_stack.request("POST", f"/organizations/{org}/leads", token=coach, json_body={"name": "Avi"})
    assert created.status == 201  # the write stands; only its events wait
    assert _unpublished(local_stack) >= 1
    local_stack.request("POST", "/_local/tick", json_body={"job": "outbox_relay"})
    assert _unpublished(local_stack) >= 1  # the relay met the outage too, and left them for its next run

    local_stack.request("DELETE", "/_local/faults?service=eventbridge")
    local_stack.request("POST", "/_local/tick", json_body={"job": "outbox_relay"})
    assert _unpublished(local_stack) == 0
    local_stack.wait_until_idle()
