"""Faults: a dependency fails and nothing saved is lost.

- SES failing while the morning digest runs: the job finishes, every failure is recorded, the others are sent.
- EventBridge failing: requests still commit (their events wait in the outbox); once the bus is back the
  outbox relay publishes every one of them and the consumers catch up.
- The database restarting between two invocations: the next invocation of each function reconnects.
- A message that fails for now: after maxReceiveCount receives it is in the DLQ, and the rest of its batch is
  done; a message that can never succeed is rejected at its first delivery and never reaches the DLQ.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import pytest
from sqlalchemy import select, text, update

from leadcrm.directory.tables import organizations
from leadcrm.platform.db.engine import get_engine
from leadcrm.work.tables import staff_digest_deliveries
from tests.support.api import call_api
from tests.support.aws import EVENT_BUS, Queue, aws_client, make_event_bus, make_queue, route_bus_to_queue
from tests.support.erase_helpers import make_task
from tests.support.events import eventbridge_envelope, lambda_context, sqs_record_from_message
from tests.support.ingestion_helpers import fresh_id, webhook_message, whatsapp_payload
from tests.support.reliability_helpers import OrgWorld, make_world, org_fingerprint

# 22:30 UTC on 10 March is 07:30 on 11 March in Tokyo: the organization's digest window.
TOKYO_MORNING = datetime(2026, 3, 10, 22, 30, tzinfo=UTC)
TOKYO_TODAY = date(2026, 3, 11)


def _task_lifecycle(event: dict[str, Any]) -> dict[str, Any]:
    from task_lifecycle.handler import lambda_handler

    return lambda_handler(event, lambda_context("leadcrm-task-lifecycle"))


def _ingestion(event: dict[str, Any]) -> dict[str, Any]:
    from ingestion.handler import lambda_handler

    return lambda_handler(event, lambda_context("leadcrm-ingestion"))


def _activities(lead_id: str, kind: str) -> int:
    with get_engine().connect() as conn:
        return conn.execute(
            text("SELECT count(*) FROM lead_activity_events WHERE lead_id = :l AND type = :t"),
            {"l": lead_id, "t": kind},
        ).scalar_one()


class _OneFunction:
    """What the local stack's poller invokes (LocalLambdas), for one handler."""

    def __init__(self, handler: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.handler = handler

    def invoke(self, name: str, event: dict[str, Any]) -> dict[str, Any]:
        return self.handler(event)


def _drain(queue: Queue, handler: Callable[[dict[str, Any]], dict[str, Any]], *, max_rounds: int = 20) -> int:
    """Lambda's event source mapping, as the local stack's poller does it: receive a batch, invoke, delete what
    did not fail; a failed message comes back after its visibility timeout (0 here). Returns the rounds."""
    from infra.local.pollers import QueuePoller

    poller = QueuePoller(_OneFunction(handler), "consumer", queue.url)  # type: ignore[arg-type]
    sqs = aws_client("sqs")
    for rounds in range(max_rounds):
        received = sqs.receive_message(
            QueueUrl=queue.url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not received:
            return rounds
        poller._deliver(sqs, received)
    raise AssertionError(f"{queue.name} still had messages after {max_rounds} receives")


def _queue_with_dlq(name: str, max_receive_count: int = 3) -> tuple[Queue, Queue]:
    sqs = aws_client("sqs")
    dlq = make_queue(f"{name}-dlq")
    url = sqs.create_queue(
        QueueName=name,
        Attributes={
            "VisibilityTimeout": "0",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": str(max_receive_count)}),
        },
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queue(name=name, url=url, arn=arn), dlq


# -- SES ----------------------------------------------------------------------------------------------------


@pytest.fixture
def tokyo() -> OrgWorld:
    world = make_world("Tokyo")
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == world.id).values(timezone="Asia/Tokyo"))
        staff = conn.execute(
            text(
                "SELECT u.id FROM users u JOIN memberships m ON m.user_id = u.id "
                "WHERE m.organization_id = :o AND m.role IN ('owner', 'admin', 'coach')"
            ),
            {"o": world.id},
        ).scalars()
        assignees = list(staff)
    for assignee in assignees:
        make_task(world.id, assignee=assignee, due_date=TOKYO_TODAY)
    return world


def _deliveries(org_id: uuid.UUID) -> list[str]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(staff_digest_deliveries.c.status).where(staff_digest_deliveries.c.organization_id == org_id)
        )
        return sorted(r.status for r in rows)


# The digest writes its delivery records (checked above) and nothing else of the organization.
DIGEST_RECORDS = frozenset({"staff_digest_deliveries"})


def test_ses_failing_for_one_mail_records_it_and_sends_the_others(tokyo):
    from leadcrm.work.digest import run_daily_digest

    aws_client("sesv2").create_email_identity(EmailIdentity="mail.leadcrm.local")
    calls: list[str] = []

    def flaky(to_address: str, subject: str, body: str) -> str:
        from leadcrm.platform.adapters.ses import send_email

        calls.append(to_address)
        if len(calls) == 2:
            raise ConnectionError("SES endpoint unreachable")
        return send_email(to_address, subject, body)

    before = org_fingerprint(tokyo.id, ignoring=DIGEST_RECORDS)
    run_daily_digest(TOKYO_MORNING, send=flaky)

    assert _deliveries(tokyo.id) == ["failed", "sent", "sent"]
    assert org_fingerprint(tokyo.id, ignoring=DIGEST_RECORDS) == before


def test_ses_down_for_the_whole_run_fails_no_job_and_loses_nothing(tokyo):
    """No verified identity: SES refuses every mail; the scheduled job still ends normally."""
    from leadcrm.work.digest import run_daily_digest

    before = org_fingerprint(tokyo.id, ignoring=DIGEST_RECORDS)
    result = run_daily_digest(TOKYO_MORNING)

    assert result["failed"] >= 3
    assert _deliveries(tokyo.id) == ["failed", "failed", "failed"]
    assert org_fingerprint(tokyo.id, ignoring=DIGEST_RECORDS) == before


# -- EventBridge --------------------------------------------------------------------------------------------


def test_while_the_bus_is_down_requests_commit_and_the_relay_catches_up_once_it_is_back():
    world = make_world()  # no bus exists yet: every publish after commit fails
    lead_ids = [world.lead() for _ in range(12)]
    with get_engine().begin() as conn:  # the relay leaves rows younger than its grace period to the request
        conn.execute(
            text("UPDATE outbox SET occurred_at = occurred_at - interval '1 minute' WHERE organization_id = :o"),
            {"o": world.id},
        )
        waiting = conn.execute(
            text("SELECT count(*) FROM outbox WHERE organization_id = :o AND published_at IS NULL"), {"o": world.id}
        ).scalar_one()
    assert waiting >= len(lead_ids)

    queue = make_queue("leadcrm-task-lifecycle")
    route_bus_to_queue(make_event_bus(EVENT_BUS), queue)
    relayed = _task_lifecycle({"job": "outbox_relay"})
    # the relay publishes every organization's waiting rows (other tests leave some): drain them all
    _drain(queue, _task_lifecycle, max_rounds=relayed["published"] // 10 + 20)

    assert relayed["published"] >= waiting
    with get_engine().connect() as conn:
        left = conn.execute(
            text("SELECT count(*) FROM outbox WHERE organization_id = :o AND published_at IS NULL"), {"o": world.id}
        ).scalar_one()
    assert left == 0
    assert [_activities(lead_id, "lead_created") for lead_id in lead_ids] == [1] * len(lead_ids)


# -- the database restarting ----------------------------------------------------------------------------------


def test_each_function_reconnects_after_the_database_restarted_between_two_invocations(private_postgres, event_bus):
    if private_postgres is None:
        pytest.skip("DATABASE_URL names a server these tests may not restart")
    world = make_world()
    lead_id = world.lead()
    lead_path = f"/organizations/{world.id}/leads/{lead_id}"
    created = _lead_created_envelope(world, lead_id)
    message = {"MessageId": str(uuid.uuid4()), "ReceiptHandle": "r", "Body": json.dumps(created), "MD5OfBody": "x"}
    record = sqs_record_from_message(message, queue_name="leadcrm-task-lifecycle")
    assert call_api("GET", lead_path, sub=world.owner).status == 200
    assert _task_lifecycle({"job": "outbox_relay"})["job"] == "outbox_relay"

    private_postgres.stop()
    private_postgres.start()

    assert call_api("GET", lead_path, sub=world.owner).status == 200
    assert _task_lifecycle({"Records": [record]}) == {"batchItemFailures": []}
    assert _activities(lead_id, "lead_created") >= 1
    assert call_api("POST", f"/organizations/{world.id}/leads", sub=world.owner, body={"name": "After"}).status == 201


# -- poison messages -------------------------------------------------------------------------------------------


def _lead_created_envelope(world: OrgWorld, lead_id: str) -> dict[str, Any]:
    return eventbridge_envelope(
        "lead.created",
        {
            "eventId": str(uuid.uuid4()),
            "type": "lead.created",
            "organizationId": str(world.id),
            "aggregateId": lead_id,
            "payload": {"leadId": lead_id, "source": "manual"},
        },
    )


POISON = {
    "task_lifecycle": {"version": "0", "id": "poison", "detail-type": "lead.created"},  # no detail
    "ingestion": {"surprise": "an unrecognised ingestion message"},
}
FAILS_FOR_NOW = {
    "task_lifecycle": eventbridge_envelope("test.fails_for_now", {"eventId": "for-now"}),
    "ingestion": webhook_message("meta.leadgen", {"object": "page", "entry": []}),
}


@pytest.fixture
def failing_for_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """The task_lifecycle reaction to `test.fails_for_now` meets a serialization failure (SQLSTATE 40001) on
    every delivery, and the ingestion function cannot reach the graph-fetch queue."""
    from ingestion import processors
    from leadcrm import wiring

    def serialization_failure(conn: Any, detail: dict[str, Any]) -> bool:
        conn.execute(text("DO $$ BEGIN RAISE EXCEPTION 'for now' USING ERRCODE = '40001'; END $$"))
        return True

    def unreachable(body: dict[str, Any]) -> str:
        raise ConnectionResetError("the queue endpoint went away")

    monkeypatch.setitem(wiring.EVENT_REACTIONS, "test.fails_for_now", serialization_failure)
    monkeypatch.setattr(processors, "forward_to_graph_fetch", unreachable)


def _batch_with(consumer: str, odd_one: dict[str, Any]) -> tuple[Queue, Queue, list[str], OrgWorld]:
    """Five messages that succeed and `odd_one` among them on a queue with a DLQ (3 receives)."""
    queue, dlq = _queue_with_dlq(f"leadcrm-{consumer}-{uuid.uuid4().hex[:6]}")
    sqs = aws_client("sqs")
    world, lead_ids = make_world(), []
    for i in range(5):
        if consumer == "task_lifecycle":
            lead_ids.append(world.lead())
            body = _lead_created_envelope(world, lead_ids[-1])
        else:
            # a WhatsApp webhook for a number nobody connected: taken, counted as dropped, acknowledged
            body = webhook_message("whatsapp", whatsapp_payload(fresh_id(), wamid=f"wamid.{fresh_id()}"))
        sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(body))
        if i == 2:
            sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(odd_one))
    return queue, dlq, lead_ids, world


def _left_on(queue: Queue) -> str:
    sqs = aws_client("sqs")
    attributes = sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["ApproximateNumberOfMessages"])
    return attributes["Attributes"]["ApproximateNumberOfMessages"]


@pytest.mark.parametrize("consumer", ["task_lifecycle", "ingestion"])
def test_a_message_that_fails_for_now_ends_in_the_dlq_and_the_rest_of_its_batch_is_done(consumer, failing_for_now):
    queue, dlq, lead_ids, _ = _batch_with(consumer, FAILS_FOR_NOW[consumer])

    _drain(queue, _task_lifecycle if consumer == "task_lifecycle" else _ingestion)

    assert [json.loads(m["Body"]) for m in dlq.receive_all()] == [FAILS_FOR_NOW[consumer]]
    assert _left_on(queue) == "0"
    if consumer == "task_lifecycle":
        assert [_activities(lead_id, "lead_created") for lead_id in lead_ids] == [1] * len(lead_ids)


@pytest.mark.parametrize("consumer", ["task_lifecycle", "ingestion"])
def test_a_message_that_can_never_succeed_is_rejected_at_once_and_never_reaches_the_dlq(consumer):
    queue, dlq, lead_ids, _ = _batch_with(consumer, POISON[consumer])

    rounds = _drain(queue, _task_lifecycle if consumer == "task_lifecycle" else _ingestion)

    assert dlq.receive_all() == []
    assert _left_on(queue) == "0"
    assert rounds == 1  # one receive took the whole batch: nothing came back
    if consumer == "task_lifecycle":
        assert [_activities(lead_id, "lead_created") for lead_id in lead_ids] == [1] * len(lead_ids)
