"""The ingestion consumer: each SQS record on its own; only the records that failed for now are handed back, and
a record that can never succeed is rejected and acknowledged (tests/integration/platform/test_consumer_failures.py
holds every kind)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from tests.support.events import function_url_event, lambda_context, sqs_event, sqs_record, sqs_record_from_message


@pytest.fixture
def ingest():
    from ingestion.handler import lambda_handler

    return lambda lambda_event: lambda_handler(lambda_event, lambda_context("leadcrm-ingestion"))


def _webhook_message(kind: str = "whatsapp") -> dict:
    return {"kind": kind, "receivedAt": "2026-01-01T10:00:00+00:00", "payload": {"object": "page", "entry": []}}


def _s3_notification() -> dict:
    return {
        "Records": [
            {
                "eventSource": "aws:s3",
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": "leadcrm-inbound"}, "object": {"key": "inbound/m1"}},
            }
        ]
    }


def test_an_unrecognised_message_is_rejected_not_retried(ingest):
    webhook = sqs_record(_webhook_message())
    unrecognised = sqs_record({"hello": "world"})
    assert ingest(sqs_event(webhook, unrecognised)) == {"batchItemFailures": []}


def test_a_message_that_is_not_json_is_rejected_not_retried(ingest):
    good = sqs_record(_webhook_message())
    broken = sqs_record("not json at all")
    assert ingest(sqs_event(good, broken)) == {"batchItemFailures": []}


def test_only_the_message_that_failed_for_now_is_handed_back(ingest, monkeypatch):
    from ingestion import processors

    def unreachable(body: dict) -> str:
        raise ConnectionResetError("the queue endpoint went away")

    monkeypatch.setattr(processors, "forward_to_graph_fetch", unreachable)
    webhook = sqs_record(_webhook_message())
    leadgen = sqs_record(_webhook_message("meta.leadgen"))
    assert ingest(sqs_event(webhook, leadgen)) == {"batchItemFailures": [{"itemIdentifier": leadgen["messageId"]}]}


def test_a_batch_of_recognised_messages_reports_no_failures(ingest):
    batch = sqs_event(
        sqs_record(_webhook_message()),
        sqs_record(_webhook_message("a.kind_without_a_processor")),
        sqs_record(_s3_notification()),
        sqs_record({"Event": "s3:TestEvent"}),
    )
    assert ingest(batch) == {"batchItemFailures": []}


def test_a_batch_in_which_every_message_fails_for_now_fails_the_invocation(ingest, monkeypatch):
    from ingestion import processors

    def unreachable(body: dict) -> str:
        raise ConnectionResetError("the queue endpoint went away")

    monkeypatch.setattr(processors, "forward_to_graph_fetch", unreachable)
    with pytest.raises(BatchProcessingError):
        ingest(sqs_event(sqs_record(_webhook_message("meta.leadgen")), sqs_record(_webhook_message("meta.leadgen"))))


def test_a_message_the_webhook_receiver_enqueued_is_accepted_by_the_consumer(ingest, ingestion_queue, meta_secrets):
    from webhooks.handler import lambda_handler as receive

    secret, _ = meta_secrets
    raw = json.dumps({"object": "whatsapp_business_account", "entry": []}).encode()
    signature = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    event = function_url_event("POST", "/webhooks/whatsapp", body=raw, headers={"x-hub-signature-256": signature})
    assert receive(event, lambda_context("leadcrm-webhooks"))["statusCode"] == 200
    records = [sqs_record_from_message(m, queue_name=ingestion_queue.name) for m in ingestion_queue.receive_all()]
    assert records[0]["messageAttributes"]["kind"]["stringValue"] == "whatsapp"
    assert ingest(sqs_event(*records)) == {"batchItemFailures": []}
