"""Outbound webhooks through the local stack (issue 25's "Done when"): a receiver on 127.0.0.1 gets a signed
`lead.created` within seconds of a capture and its signature verifies with the documented scheme; a receiver
answering 500 gets retries with growing delays (the stack's clock played forward, the sweep ticked), then the
endpoint is disabled; a replayed delivery arrives with the same delivery id; a private address is refused
when saved. (Refusal at send time: tests/integration/integrations/test_outbound_webhooks_flow.py.)"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.webhook_receiver import Received, Receiver, webhook_receiver

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def _ok(reply: Any, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.json()["data"]


def _verifies(secret: str, request: Received) -> bool:
    """The documented scheme, written out as a receiver would: base64 HMAC-SHA256 of "{id}.{timestamp}.{body}"
    keyed with the secret's bytes after `whsec_`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{request.headers['webhook-id']}.{request.headers['webhook-timestamp']}.{request.body}".encode()
    expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return hmac.compare_digest(expected, request.headers["webhook-signature"])


def _subscribe(stack: LocalStackClient, org: str, token: str, receiver: Receiver) -> dict[str, Any]:
    body = {"url": receiver.url, "eventTypes": ["lead.created"]}
    return _ok(stack.request("POST", f"/organizations/{org}/webhook-subscriptions", token=token, json_body=body), 201)


def _capture(stack: LocalStackClient, org: str) -> None:
    body = {"name": "Dana Cohen", "email": f"dana.{time.monotonic_ns()}@example.com"}
    assert stack.capture(org, body).status == 201


def test_a_capture_reaches_a_local_receiver_signed_within_seconds_and_a_replay_keeps_its_id(
    local_stack: LocalStackClient,
) -> None:
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    with webhook_receiver() as receiver:
        subscription = _subscribe(local_stack, org, owner, receiver)
        captured = time.monotonic()
        _capture(local_stack, org)
        [request] = receiver.wait_for(1, timeout=15)
        assert request.at - captured < 15
        assert _verifies(subscription["secret"], request)
        body = json.loads(request.body)
        assert (body["type"], body["organizationId"]) == ("lead.created", org)

        path = f"/organizations/{org}/webhook-subscriptions/{subscription['id']}"
        local_stack.wait_until_idle()
        [delivery] = _ok(local_stack.request("GET", f"{path}/deliveries", token=owner))
        assert (delivery["id"], delivery["status"], delivery["responseCode"]) == (
            request.headers["webhook-id"],
            "succeeded",
            200,
        )
        _ok(local_stack.request("POST", f"{path}/deliveries/{delivery['id']}/replay", token=owner), 202)
        _, again = receiver.wait_for(2, timeout=15)
        assert again.headers["webhook-id"] == delivery["id"]
        assert _verifies(subscription["secret"], again)


def test_a_failing_receiver_gets_growing_retries_then_its_endpoint_is_disabled(local_clock: LocalStackClient) -> None:
    stack = local_clock
    demo = stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    with webhook_receiver(status=500) as receiver:
        subscription = _subscribe(stack, org, owner, receiver)
        path = f"/organizations/{org}/webhook-subscriptions/{subscription['id']}"
        _capture(stack, org)
        receiver.wait_for(1, timeout=15)
        stack.wait_until_idle()
        delays: list[timedelta] = []
        for attempt in range(2, 40):
            [delivery] = _ok(stack.request("GET", f"{path}/deliveries", token=owner))
            if delivery["status"] != "pending":
                break
            due = datetime.fromisoformat(delivery["nextAttemptAt"])
            delays.append(due - datetime.fromisoformat(delivery["lastAttemptAt"]))
            stack.set_clock((due + timedelta(seconds=1)).isoformat())
            assert stack.request("POST", "/_local/tick", json_body={"job": "webhook_delivery_sweep"}).status == 200
            receiver.wait_for(attempt, timeout=15)
            stack.wait_until_idle()

        found = _ok(stack.request("GET", path, token=owner))
    assert (found["enabled"], found["disabledReason"]) == (False, "failing_for_a_day")
    assert delivery["status"] == "failed" and delivery["responseCode"] == 500
    assert len({r.headers["webhook-id"] for r in receiver.requests}) == 1
    assert len(receiver.requests) > 5
    early = delays[:6]
    assert early == sorted(early) and early[-1] > 4 * early[0]


def test_an_endpoint_on_a_private_address_is_refused_when_saved(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    reply = local_stack.request(
        "POST",
        f"/organizations/{org}/webhook-subscriptions",
        token=owner,
        json_body={"url": "https://192.168.1.10/hook", "eventTypes": ["lead.created"]},
    )
    assert (reply.status, reply.json()["error"]["code"]) == (400, "WEBHOOK_ADDRESS_NOT_PUBLIC")
