"""Messages to the ingestion queue (CSV import jobs to run or continue)."""

from __future__ import annotations

import json
from typing import Any

from leadcrm.adapters.aws import client
from leadcrm.config import get_settings


def enqueue(kind: str, payload: dict[str, Any]) -> str:
    url = get_settings().ingestion_queue_url
    if not url:
        raise RuntimeError("INGESTION_QUEUE_URL is not set")
    response = client("sqs").send_message(
        QueueUrl=url,
        MessageBody=json.dumps({"kind": kind, **payload}),
        MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
    )
    return str(response["MessageId"])
