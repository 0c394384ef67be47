"""Webhook messages whatever their size: a body too large for a queue message travels by claim check.

An SQS message holds at most 256 KiB (attributes included). Meta's webhooks are small, but a signed delivery
of any size must neither fail the receiver (a 502 makes Meta retry it for hours, then drop it) nor be lost,
so a message that would not fit keeps the raw body in the webhook bodies bucket (WEBHOOK_BODIES_BUCKET,
`webhooks/<kind>/<date>/<uuid>.json`, expired after the queues' retention) and carries its reference in
`payloadRef` instead of `payload`. The consumers (graph_fetch, ingestion) read the payload with
`payload_of`, inline or from the bucket, through the same bounded parser as every other body.

boto3 is loaded on first use only: the webhook receiver imports this module and must stay cheap to start.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from leadcrm.platform import clock, json_limits

BUCKET_VARIABLE = "WEBHOOK_BODIES_BUCKET"
PREFIX = "webhooks/"
# SQS's limit is 262,144 bytes for the body and the attributes together; the `kind` attribute and a margin
# stay below it.
MAX_INLINE_MESSAGE_BYTES = 256 * 1024 - 1024
# The largest body kept at all: Lambda function URLs take 6 MB requests, base64 included.
MAX_BODY_BYTES = 4 * 1024 * 1024


class NoBucket(RuntimeError):
    """The body needs the claim check and no bucket is configured."""


def queue_message(kind: str, payload: Any, raw: bytes, *, received_at: str | None = None) -> tuple[str, bool]:
    """The queue message for one webhook delivery, and whether its body was stored: the payload inline when
    the message fits, else a reference to `raw` (the signed bytes, as Meta sent them) stored in the bucket."""
    received_at = received_at or clock.now().isoformat()
    message = json.dumps({"kind": kind, "receivedAt": received_at, "payload": payload})
    if len(message.encode()) <= MAX_INLINE_MESSAGE_BYTES:
        return message, False
    bucket = os.environ.get(BUCKET_VARIABLE)
    if not bucket:
        raise NoBucket(f"{BUCKET_VARIABLE} is not set")
    from leadcrm.platform.adapters.aws import client

    key = f"{PREFIX}{kind}/{received_at[:10]}/{uuid.uuid4()}.json"
    client("s3").put_object(Bucket=bucket, Key=key, Body=raw, ContentType="application/json")
    reference = {"bucket": bucket, "key": key, "bytes": len(raw)}
    return json.dumps({"kind": kind, "receivedAt": received_at, "payloadRef": reference}), True


def payload_of(body: dict[str, Any]) -> Any:
    """A webhook message's payload: inline, or read back from the bucket its `payloadRef` names."""
    reference = body.get("payloadRef")
    if reference is None:
        return body.get("payload")
    if (
        not isinstance(reference, dict)
        or reference.get("bucket") != os.environ.get(BUCKET_VARIABLE)
        or not str(reference.get("key", "")).startswith(PREFIX)
    ):
        raise ValueError("payloadRef must name an object under webhooks/ of the webhook bodies bucket")
    from leadcrm.platform.adapters.s3 import read_object

    raw = read_object(str(reference["bucket"]), str(reference["key"]))
    return json_limits.loads(raw, max_bytes=MAX_BODY_BYTES)
