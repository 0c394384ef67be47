"""Publishes domain events to the LeadCRM bus."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from leadcrm.platform.adapters.aws import client
from leadcrm.platform.config import get_settings
from leadcrm.platform.events import DomainEvent

MAX_ENTRIES_PER_CALL = 10  # PutEvents limit


@dataclass(frozen=True)
class PublishResult:
    published: list[str]
    failed: dict[str, str]  # event id -> error


def put_events(events: Sequence[DomainEvent]) -> PublishResult:
    settings = get_settings()
    published: list[str] = []
    failed: dict[str, str] = {}
    for start in range(0, len(events), MAX_ENTRIES_PER_CALL):
        chunk = events[start : start + MAX_ENTRIES_PER_CALL]
        response = client("events").put_events(
            Entries=[
                {
                    "EventBusName": settings.event_bus_name,
                    "Source": settings.event_source,
                    "DetailType": event.type,
                    "Detail": json.dumps(event.detail()),
                    "Time": event.occurred_at,
                }
                for event in chunk
            ]
        )
        for event, entry in zip(chunk, response["Entries"], strict=True):
            if entry.get("EventId"):
                published.append(str(event.id))
            else:
                failed[str(event.id)] = f"{entry.get('ErrorCode')}: {entry.get('ErrorMessage')}"
    return PublishResult(published=published, failed=failed)
