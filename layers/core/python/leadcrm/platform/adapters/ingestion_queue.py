"""Messages to the ingestion queue (CSV import jobs to run or continue) and to the graph-fetch queue.

The URLs are read when a message is sent (INGESTION_QUEUE_URL, GRAPH_FETCH_QUEUE_URL); the functions that
send check them at cold start (`leadcrm.platform.environment`). graph_fetch imports this module: no pydantic.
"""

from __future__ import annotations

import json
import os
from typing import Any

from leadcrm.platform.adapters.aws import client


def enqueue(kind: str, payload: dict[str, Any]) -> str:
    url = os.environ.get("INGESTION_QUEUE_URL")
    if not url:
        raise RuntimeError("INGESTION_QUEUE_URL is not set")
    response = client("sqs").send_message(
        QueueUrl=url,
        MessageBody=json.dumps({"kind": kind, **payload}),
        MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
    )
    return str(response["MessageId"])


def forward_to_graph_fetch(body: dict[str, Any]) -> str:
    """A raw leadgen webhook message, as the receiver enqueues it, onto the graph-fetch queue."""
    url = os.environ.get("GRAPH_FETCH_QUEUE_URL")
    if not url:
        raise RuntimeError("GRAPH_FETCH_QUEUE_URL is not set")
    kind = str(body.get("kind") or "meta.leadgen")
    response = client("sqs").send_message(
        QueueUrl=url,
        MessageBody=json.dumps(body),
        MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
    )
    return str(response["MessageId"])


def to_graph_fetch(kind: str, payload: dict[str, Any]) -> str:
    """A request for the graph_fetch function (outside the VPC), e.g. a WhatsApp send or templates sync."""
    url = os.environ.get("GRAPH_FETCH_QUEUE_URL")
    if not url:
        raise RuntimeError("GRAPH_FETCH_QUEUE_URL is not set")
    response = client("sqs").send_message(
        QueueUrl=url,
        MessageBody=json.dumps({"kind": kind, **payload}),
        MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
    )
    return str(response["MessageId"])
