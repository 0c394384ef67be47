"""Outbound webhooks end to end inside one process: the API saves the endpoint, a captured lead's event
reaches task_lifecycle (moto's bus and queue), which signs and enqueues the delivery; the webhook_delivery
function posts it to a real receiver on 127.0.0.1 and reports on the bus; task_lifecycle records the result.
Backoff is played forward with the platform clock."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from leadcrm.integrations.rules.signing import verify
from leadcrm.integrations.tables import webhook_deliveries, webhook_subscriptions
from leadcrm.platform import clock
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.aws import Queue, make_queue
from tests.support.events import lambda_context, sqs_event, sqs_record_from_message
from tests.support.factories import make_caller
from tests.support.webhook_receiver import Receiver, webhook_receiver

DELIVERY_QUEUE = "leadcrm-webhook-delivery"


@pytest.fixture
def delivery_queue(monkeypatch: pytest.MonkeyPatch, lifecycle_queue: Queue) -> Queue:
    queue = make_queue(DELIVERY_QUEUE)
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", queue.url)
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_HOSTS", "127.0.0.1")
    return queue


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as found:
        yield found


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture(autouse=True)
def _real_time() -> Iterator[None]:
    yield
    clock.reset()


def _subscribe(owner: Any, url: str, types: list[str] | None = None) -> dict[str, Any]:
    reply = call_api(
        "POST",
        f"/organizations/{owner.org_id}/webhook-subscriptions",
        sub=owner.sub,
        body={"url": url, "eventTypes": types or ["lead.created"]},
    )
    assert reply.status == 201, reply.body
    return reply.data


def _run_lifecycle(lifecycle_queue: Queue) -> None:
    from task_lifecycle.handler import lambda_handler

    records = [sqs_record_from_message(m, queue_name=lifecycle_queue.name) for m in lifecycle_queue.receive_all()]
    if records:
        assert lambda_handler(sqs_event(*records), lambda_context()) == {"batchItemFailures": []}


def _run_delivery(delivery_queue: Queue) -> int:
    from webhook_delivery.handler import lambda_handler

    records = [sqs_record_from_message(m, queue_name=delivery_queue.name) for m in delivery_queue.receive_all()]
    if records:
        assert lambda_handler(sqs_event(*records), lambda_context()) == {"batchItemFailures": []}
    return len(records)


def _settle(lifecycle_queue: Queue, delivery_queue: Queue) -> None:
    """Events -> deliveries -> posts -> reports -> recorded, until nothing moves."""
    for _ in range(5):
        _run_lifecycle(lifecycle_queue)
        if not _run_delivery(delivery_queue):
            _run_lifecycle(lifecycle_queue)
            return


def _capture(owner: Any) -> str:
    reply = call_api("POST", leads_path(owner.org_id), sub=owner.sub, body={"name": "Dana Cohen"})
    assert reply.status == 201, reply.body
    return str(reply.data["id"])


def _sweep() -> dict[str, Any]:
    from task_lifecycle.handler import lambda_handler

    return lambda_handler({"job": "webhook_delivery_sweep"}, lambda_context())


def _deliveries(subscription_id: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(webhook_deliveries).where(webhook_deliveries.c.subscription_id == subscription_id)
        ).mappings()
        return [dict(r) for r in rows]


def test_a_captured_lead_reaches_the_receiver_signed_with_the_documented_scheme(
    owner, receiver, lifecycle_queue, delivery_queue
):
    subscription = _subscribe(owner, receiver.url)
    lead_id = _capture(owner)
    _settle(lifecycle_queue, delivery_queue)

    [request] = receiver.wait_for(1)
    assert verify(subscription["secret"], request.headers, request.body)
    body = json.loads(request.body)
    assert (body["type"], body["data"]["leadId"], body["organizationId"]) == (
        "lead.created",
        lead_id,
        str(owner.org_id),
    )
    assert "contact" not in body["data"] and "Dana" not in request.body  # no PII unless asked and allowed
    [delivery] = _deliveries(subscription["id"])
    assert request.headers["webhook-id"] == str(delivery["id"])
    assert (delivery["status"], delivery["attempts"], delivery["response_code"]) == ("succeeded", 1, 200)
    assert delivery["latency_ms"] is not None


def test_the_same_event_delivered_twice_makes_one_delivery(owner, receiver, lifecycle_queue, delivery_queue):
    from leadcrm.integrations.fanout import fan_out

    subscription = _subscribe(owner, receiver.url)
    _capture(owner)
    [message] = lifecycle_queue.receive_all()
    detail = json.loads(message["Body"])["detail"]
    with get_engine().begin() as conn:
        assert fan_out(conn, detail) is True
    with get_engine().begin() as conn:
        assert fan_out(conn, detail) is False
    assert len(_deliveries(subscription["id"])) == 1


def test_personal_data_goes_only_where_the_subscription_asks_and_the_plan_allows(
    receiver, lifecycle_queue, delivery_queue
):
    owner = make_caller(role="owner", features={"lead_management": True, "webhook_personal_data": True})
    reply = call_api(
        "POST",
        f"/organizations/{owner.org_id}/webhook-subscriptions",
        sub=owner.sub,
        body={"url": receiver.url, "eventTypes": ["lead.created"], "includePersonalData": True},
    )
    assert reply.status == 201, reply.body
    _capture(owner)
    _settle(lifecycle_queue, delivery_queue)
    [request] = receiver.wait_for(1)
    assert json.loads(request.body)["data"]["contact"]["name"] == "Dana Cohen"


def test_a_plan_without_personal_data_refuses_a_subscription_that_asks_for_it(owner, delivery_queue):
    reply = call_api(
        "POST",
        f"/organizations/{owner.org_id}/webhook-subscriptions",
        sub=owner.sub,
        body={"url": "https://93.184.216.34/hook", "eventTypes": ["lead.created"], "includePersonalData": True},
    )
    assert (reply.status, reply.error_code) == (400, "PERSONAL_DATA_NOT_ALLOWED")


def test_a_failing_endpoint_is_retried_with_growing_delays_then_disabled(owner, lifecycle_queue, delivery_queue):
    with webhook_receiver(status=500) as failing:
        subscription = _subscribe(owner, failing.url)
        _capture(owner)
        _settle(lifecycle_queue, delivery_queue)
        delays: list[timedelta] = []
        for _ in range(40):
            [delivery] = _deliveries(subscription["id"])
            if delivery["status"] != "pending":
                break
            delays.append(delivery["next_attempt_at"] - delivery["last_attempt_at"])
            clock.set(delivery["next_attempt_at"] + timedelta(seconds=1))
            assert _sweep()["sent"] >= 1  # other tests' deliveries may be due too
            _settle(lifecycle_queue, delivery_queue)

    [delivery] = _deliveries(subscription["id"])
    assert delivery["status"] == "failed" and delivery["response_code"] == 500
    assert len(failing.requests) == delivery["attempts"] > 5
    assert len({r.headers["webhook-id"] for r in failing.requests}) == 1  # every retry: the same delivery id
    uncapped = [d for d in delays if d < timedelta(hours=3)]
    assert uncapped == sorted(uncapped) and uncapped[-1] > 4 * uncapped[0]
    assert delivery["last_attempt_at"] - delivery["first_attempt_at"] <= timedelta(days=1)
    found = call_api(
        "GET", f"/organizations/{owner.org_id}/webhook-subscriptions/{subscription['id']}", sub=owner.sub
    ).data
    assert (found["enabled"], found["disabledReason"]) == (False, "failing_for_a_day")


def test_a_replayed_delivery_arrives_again_with_the_same_delivery_id(owner, receiver, lifecycle_queue, delivery_queue):
    subscription = _subscribe(owner, receiver.url)
    _capture(owner)
    _settle(lifecycle_queue, delivery_queue)
    [delivery] = _deliveries(subscription["id"])

    path = f"/organizations/{owner.org_id}/webhook-subscriptions/{subscription['id']}"
    reply = call_api("POST", f"{path}/deliveries/{delivery['id']}/replay", sub=owner.sub)
    assert reply.status == 202, reply.body
    _settle(lifecycle_queue, delivery_queue)

    first, again = receiver.wait_for(2)
    assert first.headers["webhook-id"] == again.headers["webhook-id"] == str(delivery["id"])
    assert verify(subscription["secret"], again.headers, again.body)
    log = call_api("GET", f"{path}/deliveries", sub=owner.sub).data
    assert [(d["id"], d["status"], d["attempts"]) for d in log] == [(str(delivery["id"]), "succeeded", 2)]


def test_an_endpoint_on_a_private_address_is_refused_when_saved(owner, delivery_queue):
    for url in (
        "https://10.0.0.5/hook",
        "https://169.254.169.254/latest",
        "https://[fd00::1]/x",
        "https://100.64.1.1/",
    ):
        reply = call_api(
            "POST",
            f"/organizations/{owner.org_id}/webhook-subscriptions",
            sub=owner.sub,
            body={"url": url, "eventTypes": ["lead.created"]},
        )
        assert (reply.status, reply.error_code) == (400, "WEBHOOK_ADDRESS_NOT_PUBLIC"), url


def test_plain_http_is_refused_for_a_public_address(owner, delivery_queue):
    reply = call_api(
        "POST",
        f"/organizations/{owner.org_id}/webhook-subscriptions",
        sub=owner.sub,
        body={"url": "http://93.184.216.34/hook", "eventTypes": ["lead.created"]},
    )
    assert (reply.status, reply.error_code) == (400, "WEBHOOK_URL_NOT_HTTPS")


def test_an_endpoint_that_points_at_a_private_address_at_send_time_is_refused_and_disabled(
    owner, receiver, lifecycle_queue, delivery_queue
):
    subscription = _subscribe(owner, receiver.url)
    # the name now answers a private address (as a DNS change would make it): saved public, refused at send
    with get_engine().begin() as conn:
        conn.execute(
            update(webhook_subscriptions)
            .where(webhook_subscriptions.c.id == subscription["id"])
            .values(url=f"http://10.0.0.5:{receiver.port}/hook")
        )
    _capture(owner)
    _settle(lifecycle_queue, delivery_queue)

    assert receiver.requests == []
    [delivery] = _deliveries(subscription["id"])
    assert (delivery["status"], delivery["response_code"]) == ("failed", None)
    found = call_api(
        "GET", f"/organizations/{owner.org_id}/webhook-subscriptions/{subscription['id']}", sub=owner.sub
    ).data
    assert (found["enabled"], found["disabledReason"]) == (False, "WEBHOOK_ADDRESS_NOT_PUBLIC")


def test_the_same_event_to_the_same_endpoint_always_gets_the_same_delivery_id(owner, receiver, delivery_queue):
    from leadcrm.integrations.fanout import delivery_id

    subscription_id, event_id = uuid.uuid4(), uuid.uuid4()
    assert delivery_id(subscription_id, event_id, "lead.created") == delivery_id(
        subscription_id, event_id, "lead.created"
    )
    assert delivery_id(subscription_id, event_id, "lead.created") != delivery_id(
        subscription_id, event_id, "lead.status_changed"
    )


def test_enabling_an_endpoint_again_sends_what_waited_with_a_new_day_of_retries(owner, lifecycle_queue, delivery_queue):
    with webhook_receiver(status=500) as receiver:
        subscription = _subscribe(owner, receiver.url)
        path = f"/organizations/{owner.org_id}/webhook-subscriptions/{subscription['id']}"
        assert call_api("PATCH", path, sub=owner.sub, body={"enabled": False}).status == 200
        with get_engine().begin() as conn:  # a delivery left waiting while it was disabled, its day long gone
            conn.execute(
                webhook_deliveries.insert().values(
                    id=uuid.uuid4(),
                    organization_id=owner.org_id,
                    subscription_id=subscription["id"],
                    event_id=uuid.uuid4(),
                    event_type="lead.created",
                    payload={},
                    occurred_at=clock.now() - timedelta(days=3),
                    attempts=4,
                    first_attempt_at=clock.now() - timedelta(days=3),
                    next_attempt_at=clock.now() - timedelta(days=2),
                )
            )
        assert _sweep()["due"] >= 0 and receiver.requests == []  # disabled: nothing sent

        enabled = call_api("PATCH", path, sub=owner.sub, body={"enabled": True}).data
        assert (enabled["enabled"], enabled["disabledReason"]) == (True, None)
        _sweep()
        _settle(lifecycle_queue, delivery_queue)
        receiver.wait_for(1)
        [delivery] = _deliveries(subscription["id"])
        assert delivery["status"] == "pending" and delivery["attempts"] == 5  # retried, not given up
