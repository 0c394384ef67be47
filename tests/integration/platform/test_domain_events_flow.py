"""Outbox → EventBridge → SQS → task_lifecycle: `lead.created` reaches the lead's timeline once."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from sqlalchemy import func, select, text

from leadcrm.leads.tables import lead_activity_events
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.outbox import relay_unpublished
from leadcrm.platform.tables import outbox
from tests.support.api import call_api, leads_path
from tests.support.events import eventbridge_envelope, sqs_event, sqs_record, sqs_record_from_message
from tests.support.factories import make_caller


@pytest.fixture
def task_lifecycle():
    from task_lifecycle.handler import lambda_handler

    return lambda_handler


def _create_lead(caller) -> dict:
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Ada Lovelace"})
    assert response.status == 201, response.body
    return response.data


def _deliveries(queue) -> list[dict]:
    """What Lambda's event source mapping would hand task_lifecycle: the queue's messages as SQS records."""
    return [sqs_record_from_message(m, queue_name=queue.name) for m in queue.receive_all()]


def _activities(lead_id: str) -> list[dict]:
    with get_engine().connect() as conn:
        return [
            dict(r)
            for r in conn.execute(
                select(lead_activity_events).where(lead_activity_events.c.lead_id == uuid.UUID(lead_id))
            ).mappings()
        ]


def _outbox_row(lead_id: str) -> dict:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(outbox).where(outbox.c.aggregate_id == uuid.UUID(lead_id))).mappings().one())


def test_a_created_lead_is_published_to_the_bus_and_routed_to_the_lifecycle_queue(lifecycle_queue):
    caller = make_caller()
    lead = _create_lead(caller)
    messages = lifecycle_queue.receive_all()
    assert len(messages) == 1
    envelope = json.loads(messages[0]["Body"])
    assert envelope["detail-type"] == "lead.created"
    assert envelope["source"] == "leadcrm"
    assert envelope["detail"]["type"] == "lead.created"
    assert envelope["detail"]["organizationId"] == str(caller.org_id)
    assert envelope["detail"]["payload"]["leadId"] == lead["id"]


def test_the_published_event_carries_the_outbox_row_id_as_its_event_id(lifecycle_queue):
    lead = _create_lead(make_caller())
    envelope = json.loads(lifecycle_queue.receive_all()[0]["Body"])
    assert envelope["detail"]["eventId"] == str(_outbox_row(lead["id"])["id"])


def test_an_event_its_request_published_waits_unstamped_for_the_relay_with_its_attempt_counted(lifecycle_queue):
    lead = _create_lead(make_caller())
    row = _outbox_row(lead["id"])
    assert len(lifecycle_queue.receive_all()) == 1  # on the bus already
    assert (row["published_at"], row["attempts"], row["last_error"]) == (None, 1, None)


def test_the_relay_publishes_an_event_its_request_published_again_and_stamps_it(lifecycle_queue):
    lead = _create_lead(make_caller())
    lifecycle_queue.receive_all()
    relay_unpublished(grace=timedelta(0))
    again = [json.loads(m["Body"])["detail"] for m in lifecycle_queue.receive_all()]
    row = _outbox_row(lead["id"])
    assert str(row["id"]) in [detail["eventId"] for detail in again]  # the same event id: consumers deduplicate
    assert row["published_at"] is not None
    assert row["attempts"] == 2


def test_an_event_its_consumer_received_is_stamped_and_the_relay_sends_it_no_more(lifecycle_queue, task_lifecycle, ctx):
    lead = _create_lead(make_caller())
    assert task_lifecycle(sqs_event(*_deliveries(lifecycle_queue)), ctx) == {"batchItemFailures": []}
    assert _outbox_row(lead["id"])["published_at"] is not None
    relay_unpublished(grace=timedelta(0))
    assert lifecycle_queue.receive_all() == []


def test_an_event_whose_handling_failed_stays_unstamped_for_the_relay(
    lifecycle_queue, task_lifecycle, ctx, monkeypatch
):
    import task_lifecycle.handler as consumer

    def fails_for_now(*args):
        raise ConnectionError("the database went away")

    lead = _create_lead(make_caller())
    monkeypatch.setattr(consumer, "handle_event", fails_for_now)
    with pytest.raises(BatchProcessingError):  # the whole batch failed for now: SQS delivers it again
        task_lifecycle(sqs_event(*_deliveries(lifecycle_queue)), ctx)
    assert _outbox_row(lead["id"])["published_at"] is None  # the stamp rolled back with the handling


def test_delivering_lead_created_puts_a_lead_created_activity_on_the_timeline(lifecycle_queue, task_lifecycle, ctx):
    caller = make_caller()
    lead = _create_lead(caller)
    result = task_lifecycle(sqs_event(*_deliveries(lifecycle_queue)), ctx)
    assert result == {"batchItemFailures": []}
    timeline = call_api("GET", leads_path(caller.org_id, lead["id"]), sub=caller.sub).data["timeline"]
    activities = [entry for entry in timeline if entry["kind"] == "activity"]
    assert [entry["type"] for entry in activities] == ["lead_created"]
    assert activities[0]["payload"]["source"] == "manual"


def test_delivering_the_same_event_again_adds_nothing(lifecycle_queue, task_lifecycle, ctx):
    lead = _create_lead(make_caller())
    records = _deliveries(lifecycle_queue)
    task_lifecycle(sqs_event(*records), ctx)
    again = task_lifecycle(sqs_event(*records), ctx)
    assert again == {"batchItemFailures": []}
    assert len(_activities(lead["id"])) == 1


def test_the_same_event_twice_in_one_batch_is_recorded_once(lifecycle_queue, task_lifecycle, ctx):
    lead = _create_lead(make_caller())
    (record,) = _deliveries(lifecycle_queue)
    duplicate = {**record, "messageId": str(uuid.uuid4())}
    assert task_lifecycle(sqs_event(record, duplicate), ctx) == {"batchItemFailures": []}
    assert len(_activities(lead["id"])) == 1


def test_a_broken_record_is_rejected_while_a_good_one_in_the_same_batch_is_processed(
    lifecycle_queue, task_lifecycle, ctx
):
    """Not JSON can never succeed: acknowledged and counted (leadcrm.platform.failures), never retried."""
    lead = _create_lead(make_caller())
    (good,) = _deliveries(lifecycle_queue)
    broken = sqs_record("{this is not json", queue_name=lifecycle_queue.name)
    result = task_lifecycle(sqs_event(broken, good), ctx)
    assert result == {"batchItemFailures": []}
    assert len(_activities(lead["id"])) == 1


def test_an_envelope_without_detail_is_rejected_not_retried(task_lifecycle, ctx):
    no_detail = sqs_record({"version": "0", "detail-type": "lead.created"}, queue_name="leadcrm-task-lifecycle")
    ignored = sqs_record(
        eventbridge_envelope("something.else", {"eventId": str(uuid.uuid4())}), queue_name="leadcrm-task-lifecycle"
    )
    result = task_lifecycle(sqs_event(no_detail, ignored), ctx)
    assert result == {"batchItemFailures": []}


def test_a_batch_in_which_every_record_fails_for_now_fails_the_invocation_so_the_whole_batch_is_retried(
    task_lifecycle, ctx, monkeypatch
):
    from leadcrm import wiring

    def deadlocked(conn, detail):
        conn.execute(text("DO $$ BEGIN RAISE EXCEPTION 'for now' USING ERRCODE = '40P01'; END $$"))

    monkeypatch.setitem(wiring.EVENT_REACTIONS, "test.deadlocked", deadlocked)
    record = sqs_record(eventbridge_envelope("test.deadlocked", {"eventId": str(uuid.uuid4())}))
    with pytest.raises(BatchProcessingError):
        task_lifecycle(sqs_event(record), ctx)


def test_an_event_type_nobody_handles_is_acknowledged(task_lifecycle, ctx):
    envelope = eventbridge_envelope(
        "membership.activated", {"eventId": str(uuid.uuid4()), "payload": {}}, source="platform.memberships"
    )
    record = sqs_record(envelope, queue_name="leadcrm-task-lifecycle")
    assert task_lifecycle(sqs_event(record), ctx) == {"batchItemFailures": []}


def test_lead_created_for_a_lead_that_no_longer_exists_is_acknowledged_and_records_nothing(task_lifecycle, ctx):
    caller = make_caller()
    missing_lead = str(uuid.uuid4())
    detail = {
        "eventId": str(uuid.uuid4()),
        "type": "lead.created",
        "organizationId": str(caller.org_id),
        "aggregateId": missing_lead,
        "occurredAt": "2026-01-01T00:00:00+00:00",
        "payload": {"leadId": missing_lead, "source": "manual"},
    }
    record = sqs_record(eventbridge_envelope("lead.created", detail), queue_name="leadcrm-task-lifecycle")
    assert task_lifecycle(sqs_event(record), ctx) == {"batchItemFailures": []}
    with get_engine().connect() as conn:
        count = conn.execute(
            select(func.count())
            .select_from(lead_activity_events)
            .where(lead_activity_events.c.lead_id == uuid.UUID(missing_lead))
        ).scalar_one()
    assert count == 0


def test_lead_created_naming_another_organization_records_nothing_on_the_lead(lifecycle_queue, task_lifecycle, ctx):
    lead = _create_lead(make_caller())
    (record,) = _deliveries(lifecycle_queue)
    envelope = json.loads(record["body"])
    envelope["detail"]["organizationId"] = str(make_caller().org_id)
    forged = sqs_record(envelope, queue_name=lifecycle_queue.name)
    assert task_lifecycle(sqs_event(forged), ctx) == {"batchItemFailures": []}
    assert _activities(lead["id"]) == []
