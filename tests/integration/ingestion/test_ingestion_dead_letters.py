"""Failure handling: the graph_fetch and ingestion functions report partial batch failures, so a message that
failed for now is retried alone and, after the queue's receive limit, parked in that queue's dead-letter queue
while the rest of its batch is processed once; a message that can never succeed is rejected at its first
delivery and never reaches the DLQ (leadcrm.platform.failures). Driven through moto SQS with a redrive
policy, as Lambda's event source mapping drives it."""

from __future__ import annotations

import json

import pytest

from leadcrm.ingestion.rules.meta import LeadgenChange, fetched_lead_payload
from tests.support.aws import Queue, aws_client, make_queue
from tests.support.events import lambda_context, sqs_event, sqs_record_from_message
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    connect_page,
    counts,
    fresh_id,
    graph_lead,
    graph_stand_in,
    leadgen_payload,
    webhook_message,
)

MAX_RECEIVE_COUNT = 3


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Units of work publish after commit; the bus exists."""


@pytest.fixture
def graph(monkeypatch):
    with graph_stand_in(monkeypatch) as stand_in:
        yield stand_in


def _work_queue(name: str) -> tuple[Queue, Queue]:
    """A queue and its DLQ, as infra makes them (a redrive policy with a receive limit)."""
    sqs = aws_client("sqs")
    dlq = make_queue(f"{name}-dlq")
    url = sqs.create_queue(
        QueueName=name,
        Attributes={
            "VisibilityTimeout": "0",  # a failed message is visible again at once: no waiting in the test
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": MAX_RECEIVE_COUNT}),
        },
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queue(name, url, arn), dlq


@pytest.fixture
def queues(monkeypatch) -> tuple[Queue, Queue]:
    """The ingestion queue (INGESTION_QUEUE_URL: graph_fetch sends there) and its DLQ."""
    queue, dlq = _work_queue("leadcrm-ingestion-test")
    monkeypatch.setenv("INGESTION_QUEUE_URL", queue.url)
    from leadcrm.platform.config import get_settings

    get_settings.cache_clear()
    return queue, dlq


def _drain(queue: Queue, function: str = "ingestion", rounds: int = 10) -> list[dict]:
    """What the event source mapping does: receive a batch, invoke, delete what succeeded; until empty."""
    import importlib

    lambda_handler = importlib.import_module(f"{function}.handler").lambda_handler
    sqs, results = aws_client("sqs"), []
    for _ in range(rounds):
        messages = sqs.receive_message(
            QueueUrl=queue.url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return results
        records = [sqs_record_from_message(m, queue_name=queue.name) for m in messages]
        try:
            result = lambda_handler(sqs_event(*records), lambda_context(f"leadcrm-{function}"))
        except Exception:  # every record failed: nothing is deleted
            result = {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records]}
        results.append(result)
        failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=queue.url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
    raise AssertionError("the queue never drained")


def test_a_leadgen_graph_keeps_failing_ends_in_the_graph_fetch_dlq_and_the_rest_of_its_batch_is_ingested(graph, queues):
    ingestion, _ = queues
    graph_fetch, graph_fetch_dlq = _work_queue("leadcrm-graph-fetch-test")
    owner = make_caller(role="owner")
    page = fresh_id()
    connect_page(owner, page)
    good = [fresh_id() for _ in range(3)]
    for i, leadgen_id in enumerate(good):
        graph.register(graph_lead(leadgen_id, email=f"person{i}@example.com", phone=None))
    poison = fresh_id()
    graph.fail(poison, 500)  # Graph answers 500 to every attempt
    sqs = aws_client("sqs")
    for leadgen_id in [good[0], poison, *good[1:]]:
        sqs.send_message(
            QueueUrl=graph_fetch.url,
            MessageBody=json.dumps(webhook_message("meta.leadgen", leadgen_payload(page, leadgen_id))),
        )

    results = _drain(graph_fetch, "graph_fetch")
    _drain(ingestion)

    assert counts(owner.org_id)["leads"] == 3
    parked = graph_fetch_dlq.receive_all()
    assert len(parked) == 1
    assert poison in parked[0]["Body"]
    assert len(results) >= MAX_RECEIVE_COUNT  # the poison was tried up to the limit, alone after the first batch
    assert all(len(r["batchItemFailures"]) <= 1 for r in results)


def test_a_message_that_can_never_succeed_is_rejected_at_once_and_the_rest_of_its_batch_succeeds(graph, queues):
    queue, dlq = queues
    owner = make_caller(role="owner")
    page = fresh_id()
    connect_page(owner, page)
    good = [fresh_id() for _ in range(3)]
    sqs = aws_client("sqs")
    bodies = [
        {"kind": "meta.lead", "payload": fetched_lead_payload(LeadgenChange(page, leadgen_id), graph_lead(leadgen_id))}
        for leadgen_id in good
    ]
    for i, body in enumerate(bodies):
        body["payload"]["lead"]["field_data"] = [{"name": "email", "values": [f"person{i}@example.com"]}]
    poison = {"kind": "meta.lead", "payload": {"leadgenId": fresh_id()}}  # no page, no lead: never valid
    for body in [bodies[0], poison, *bodies[1:]]:
        sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(body))

    results = _drain(queue)

    assert counts(owner.org_id)["leads"] == 3
    assert dlq.receive_all() == []
    assert results == [{"batchItemFailures": []}]
