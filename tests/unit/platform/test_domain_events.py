"""leadcrm.platform.events: the EventBridge `detail` of a domain event."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from leadcrm.platform.events import LEAD_CREATED, DomainEvent
from leadcrm.platform.ids import uuid7


def _event(**overrides) -> DomainEvent:
    values = dict(type=LEAD_CREATED, organization_id=uuid7(), aggregate_id=uuid7(), payload={"leadId": "x"})
    return DomainEvent(**{**values, **overrides})


def test_the_detail_carries_the_event_organization_and_aggregate_ids_as_strings():
    event = _event()
    detail = event.detail()
    assert detail["eventId"] == str(event.id)
    assert detail["organizationId"] == str(event.organization_id)
    assert detail["aggregateId"] == str(event.aggregate_id)


def test_the_detail_carries_the_event_type():
    assert _event().detail()["type"] == "lead.created"


def test_the_detail_carries_the_payload_exactly_as_given():
    payload = {"leadId": str(uuid7()), "source": "manual", "nested": {"n": [1, 2]}}
    assert _event(payload=payload).detail()["payload"] == payload


def test_the_detail_carries_when_the_event_occurred_in_iso_format():
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert _event(occurred_at=at).detail()["occurredAt"] == "2026-01-02T03:04:05+00:00"


def test_each_event_gets_its_own_uuid7_id():
    first, second = _event(), _event()
    assert first.id != second.id
    assert isinstance(first.id, uuid.UUID) and first.id.version == 7
