"""ingestion.handler.describe: what a queued message is, in ids only."""

from __future__ import annotations

import pytest

from ingestion.handler import describe


def test_a_webhook_message_is_described_by_its_kind_and_receipt_time():
    body = {"kind": "meta.leadgen", "receivedAt": "2026-01-01T10:00:00+00:00", "payload": {"entry": []}}
    assert describe(body) == {"kind": "meta.leadgen", "receivedAt": "2026-01-01T10:00:00+00:00"}


def test_a_whatsapp_message_is_described_by_its_kind():
    assert describe({"kind": "whatsapp", "payload": {}})["kind"] == "whatsapp"


def test_the_description_of_a_webhook_message_leaves_the_payload_out():
    body = {"kind": "meta.leadgen", "receivedAt": None, "payload": {"email": "ada@example.com"}}
    assert "payload" not in describe(body)


def test_an_s3_notification_for_inbound_mail_is_described_by_bucket_and_key():
    body = {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "eu-west-1",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "bucket": {"name": "leadcrm-inbound", "arn": "arn:aws:s3:::leadcrm-inbound"},
                    "object": {"key": "inbound/abc123", "size": 2048},
                },
            }
        ]
    }
    assert describe(body) == {"kind": "email.inbound", "bucket": "leadcrm-inbound", "key": "inbound/abc123"}


def test_the_s3_test_event_is_recognised():
    body = {"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "leadcrm-inbound"}
    assert describe(body) == {"kind": "s3.test"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"hello": "world"},
        {"Records": []},
        {"Records": [{"eventSource": "aws:sns"}]},
    ],
)
def test_an_unrecognised_message_raises_value_error(body):
    with pytest.raises(ValueError):
        describe(body)
