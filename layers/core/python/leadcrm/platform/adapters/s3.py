"""Reads objects from S3 (the raw inbound mail SES stored); the client is created on first use."""

from __future__ import annotations

from leadcrm.platform.adapters.aws import client

# SES accepts messages up to 40 MB; a conversation keeps the text, so a larger object is not read whole.
MAX_OBJECT_BYTES = 40 * 1024 * 1024


def read_object(bucket: str, key: str) -> bytes:
    response = client("s3").get_object(Bucket=bucket, Key=key)
    body = response["Body"]
    try:
        return body.read(MAX_OBJECT_BYTES)
    finally:
        body.close()
