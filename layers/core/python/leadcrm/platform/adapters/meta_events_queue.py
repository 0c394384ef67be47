"""Messages to the meta-events queue: CRM events for the meta_events function (outside the VPC) to send to Meta.

The URL is read when a message is sent (META_EVENTS_QUEUE_URL, set on task_lifecycle by the stack).
"""

from __future__ import annotations

from typing import Any

from leadcrm.platform.adapters import work_queues


def enqueue(kind: str, payload: dict[str, Any]) -> str:
    return work_queues.send("META_EVENTS_QUEUE_URL", kind, {"kind": kind, **payload})
