"""Messages to the meta-events queue: CRM events for the meta_events function (outside the VPC) to send to Meta.

The URL is read when a message is sent (META_EVENTS_QUEUE_URL, set on task_lifecycle by the stack).
"""

from __future__ import annotations

import json
import os
from typing import Any

from leadcrm.platform.adapters.aws import client


def enqueue(kind: str, payload: dict[str, Any]) -> str:
    url = os.environ.get("META_EVENTS_QUEUE_URL")
    if not url:
        raise RuntimeError("META_EVENTS_QUEUE_URL is not set")
    response = client("sqs").send_message(
        QueueUrl=url,
        MessageBody=json.dumps({"kind": kind, **payload}),
        MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
    )
    return str(response["MessageId"])
