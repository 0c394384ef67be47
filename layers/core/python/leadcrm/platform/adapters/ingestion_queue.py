"""Messages to the ingestion queue (CSV import jobs to run or continue) and to the graph-fetch queue.

The URLs are read when a message is sent (INGESTION_QUEUE_URL, GRAPH_FETCH_QUEUE_URL); the functions that
send check them at cold start (`leadcrm.platform.environment`). graph_fetch imports this module: no pydantic.
"""

from __future__ import annotations

from typing import Any

from leadcrm.platform.adapters import work_queues


def enqueue(kind: str, payload: dict[str, Any]) -> str:
    return work_queues.send("INGESTION_QUEUE_URL", kind, {"kind": kind, **payload})


def forward_to_graph_fetch(body: dict[str, Any]) -> str:
    """A raw leadgen webhook message, as the receiver enqueues it, onto the graph-fetch queue."""
    return work_queues.send("GRAPH_FETCH_QUEUE_URL", str(body.get("kind") or "meta.leadgen"), body)


def to_graph_fetch(kind: str, payload: dict[str, Any]) -> str:
    """A request for the graph_fetch function (outside the VPC), e.g. a WhatsApp send or templates sync."""
    return work_queues.send("GRAPH_FETCH_QUEUE_URL", kind, {"kind": kind, **payload})
