"""The webhook receiver survives any signed body: never a 502.

- JSON nested over 32 levels, a 5000-digit number, `NaN`: 400 MALFORMED_JSON, as on the API; a body that is no
  JSON object (`5`): 400; nothing queued.
- A body whose queue message would pass SQS's 256 KiB: stored in the webhook bodies bucket and queued by
  reference (a claim check, counted as WebhookBodiesStored); the consumer reads it back and takes the leads in.
- Over 4 MiB, or too large for a message while no bucket is configured: 413 BODY_TOO_LARGE, counted as
  WebhookBodiesRefused, nothing queued.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest

from tests.support.aws import aws_client
from tests.support.capture_helpers import lead_rows
from tests.support.events import function_url_event, lambda_context
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    connect_number,
    connect_page,
    ctwa_referral,
    deliver,
    fetch,
    fresh_id,
    graph_lead,
    graph_stand_in,
    leadgen_payload,
    queued_for_ingestion,
    whatsapp_payload,
)

BUCKET = "leadcrm-webhook-bodies-test"
LEADGEN, WHATSAPP = "/webhooks/meta/leadgen", "/webhooks/whatsapp"


@pytest.fixture(autouse=True)
def _environment(event_bus, ingestion_queue, graph_fetch_queue, meta_secrets, monkeypatch):
    """The queues and the Meta secrets; the webhook bodies bucket exists and WEBHOOK_BODIES_BUCKET names it."""
    aws_client("s3").create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    monkeypatch.setenv("WEBHOOK_BODIES_BUCKET", BUCKET)


def _receive(path: str, raw: bytes, secret: str) -> dict[str, Any]:
    from webhooks.handler import lambda_handler

    signature = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    event = function_url_event("POST", path, body=raw, headers={"x-hub-signature-256": signature})
    return lambda_handler(event, lambda_context("leadcrm-webhooks"))


def _queued(url_variable: str) -> list[dict[str, Any]]:
    import os

    sqs, url, bodies = aws_client("sqs"), os.environ[url_variable], []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies.extend(json.loads(m["Body"]) for m in messages)
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )
    return bodies


def _stored_keys() -> list[str]:
    return [o["Key"] for o in aws_client("s3").list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def _metrics(stdout: str, name: str) -> list[str]:
    kinds = []
    for line in stdout.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and name in document and "_aws" in document:
            kinds.append(document["kind"])
    return kinds


def _padded(payload: dict[str, Any], size: int) -> bytes:
    """`payload` with an extra top-level field that brings its JSON to `size` bytes (Meta ignores nothing we
    read, and we read nothing of it)."""
    raw = json.dumps({**payload, "padding": ""}).encode()
    return json.dumps({**payload, "padding": "x" * (size - len(raw))}).encode()


@pytest.mark.parametrize(
    "raw",
    [b"[" * 1000 + b"]" * 1000, b'{"entry": ' * 1000 + b"1" + b"}" * 1000, b'{"n": ' + b"7" * 5000 + b"}", b"NaN"],
    ids=["1000 nested arrays", "1000 nested objects", "a 5000-digit number", "NaN"],
)
def test_signed_json_beyond_the_limits_is_a_400_malformed_json_and_nothing_is_queued(raw, meta_secrets):
    response = _receive(WHATSAPP, raw, meta_secrets[0])
    assert response["statusCode"] == 400
    assert json.loads(response["body"])["error"]["code"] == "MALFORMED_JSON"
    assert _queued("INGESTION_QUEUE_URL") == []


@pytest.mark.parametrize("raw", [b"5", b"[]", b'"text"', b"null"])
def test_a_signed_body_that_is_no_json_object_is_a_400_and_nothing_is_queued(raw, meta_secrets):
    response = _receive(LEADGEN, raw, meta_secrets[0])
    assert response["statusCode"] == 400
    assert json.loads(response["body"])["error"]["code"] == "VALIDATION_FAILED"
    assert _queued("GRAPH_FETCH_QUEUE_URL") == []


def test_a_body_too_large_for_a_queue_message_is_stored_and_queued_by_reference(meta_secrets, capsys):
    raw = _padded(whatsapp_payload(fresh_id(), wamid=f"wamid.{fresh_id()}"), 300 * 1024)

    response = _receive(WHATSAPP, raw, meta_secrets[0])

    assert response["statusCode"] == 200
    (message,) = _queued("INGESTION_QUEUE_URL")
    assert "payload" not in message
    assert message["payloadRef"]["bucket"] == BUCKET
    assert _stored_keys() == [message["payloadRef"]["key"]]
    stored = aws_client("s3").get_object(Bucket=BUCKET, Key=message["payloadRef"]["key"])["Body"].read()
    assert stored == raw  # the signed bytes, as Meta sent them
    assert _metrics(capsys.readouterr().out, "WebhookBodiesStored") == ["whatsapp"]


def test_a_small_body_is_queued_inline_and_nothing_is_stored(meta_secrets):
    raw = json.dumps(whatsapp_payload(fresh_id(), wamid=f"wamid.{fresh_id()}")).encode()
    assert _receive(WHATSAPP, raw, meta_secrets[0])["statusCode"] == 200
    (message,) = _queued("INGESTION_QUEUE_URL")
    assert message["payload"] == json.loads(raw)
    assert _stored_keys() == []


def test_a_stored_whatsapp_webhook_is_read_back_and_its_lead_taken_in(meta_secrets):
    owner, phone_number_id = make_caller(role="owner"), fresh_id()
    connect_number(owner, phone_number_id)
    referral = ctwa_referral(ctwa_clid=fresh_id())  # a click on an ad: a lead, not an organic message
    raw = _padded(whatsapp_payload(phone_number_id, wamid=f"wamid.{fresh_id()}", referral=referral), 300 * 1024)
    assert _receive(WHATSAPP, raw, meta_secrets[0])["statusCode"] == 200

    assert deliver(*_queued("INGESTION_QUEUE_URL")) == {"batchItemFailures": []}

    assert len(lead_rows(owner.org_id)) == 1


def test_a_stored_leadgen_webhook_is_read_back_by_graph_fetch_and_its_lead_taken_in(meta_secrets, monkeypatch):
    owner, page_id, leadgen_id = make_caller(role="owner"), fresh_id(), fresh_id()
    connect_page(owner, page_id)
    raw = _padded(leadgen_payload(page_id, leadgen_id), 300 * 1024)
    assert _receive(LEADGEN, raw, meta_secrets[0])["statusCode"] == 200

    with graph_stand_in(monkeypatch) as graph:
        graph.register(graph_lead(leadgen_id))
        assert fetch(*_queued("GRAPH_FETCH_QUEUE_URL")) == {"batchItemFailures": []}
    assert deliver(*queued_for_ingestion()) == {"batchItemFailures": []}

    assert len(lead_rows(owner.org_id)) == 1


def test_a_body_over_4_mib_is_a_413_counted_and_nothing_is_queued_or_stored(meta_secrets, capsys):
    raw = _padded(whatsapp_payload(fresh_id(), wamid=f"wamid.{fresh_id()}"), 4 * 1024 * 1024 + 1)

    response = _receive(WHATSAPP, raw, meta_secrets[0])

    assert response["statusCode"] == 413
    assert json.loads(response["body"])["error"]["code"] == "BODY_TOO_LARGE"
    assert _queued("INGESTION_QUEUE_URL") == [] and _stored_keys() == []
    assert _metrics(capsys.readouterr().out, "WebhookBodiesRefused") == ["whatsapp"]


def test_without_a_bucket_a_body_too_large_for_a_message_is_a_413_not_a_502(meta_secrets, monkeypatch, capsys):
    monkeypatch.delenv("WEBHOOK_BODIES_BUCKET")
    raw = _padded(leadgen_payload(fresh_id(), fresh_id()), 300 * 1024)

    response = _receive(LEADGEN, raw, meta_secrets[0])

    assert response["statusCode"] == 413
    assert _queued("GRAPH_FETCH_QUEUE_URL") == []
    assert _metrics(capsys.readouterr().out, "WebhookBodiesRefused") == ["meta.leadgen"]


def test_a_reference_to_another_bucket_is_rejected_by_the_consumer(caplog):
    message = {"kind": "whatsapp", "payloadRef": {"bucket": "someone-elses", "key": "webhooks/x.json"}}
    assert deliver(message) == {"batchItemFailures": []}
    assert any(r.getMessage() == "message rejected" for r in caplog.records)
