"""Domain events. The outbox row is the event: ids only in the payload, never PII."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from leadcrm.platform import clock
from leadcrm.platform.ids import uuid7

LEAD_CREATED = "lead.created"
LEAD_STATUS_CHANGED = "lead.status_changed"
MEMBERSHIP_ACTIVATED = "membership.activated"
# A contact's message was recorded in a thread: {organizationId, conversationId, leadId|null, messageId, channel}.
CONVERSATION_INBOUND_RECEIVED = "conversation.inbound_received"


@dataclass(frozen=True)
class DomainEvent:
    type: str
    organization_id: uuid.UUID
    aggregate_id: uuid.UUID
    payload: dict[str, Any]
    id: uuid.UUID = field(default_factory=uuid7)
    occurred_at: datetime = field(default_factory=clock.now)

    def detail(self) -> dict[str, Any]:
        """The EventBridge `detail`: everything a consumer needs to process the event idempotently."""
        return {
            "eventId": str(self.id),
            "type": self.type,
            "organizationId": str(self.organization_id),
            "aggregateId": str(self.aggregate_id),
            "occurredAt": self.occurred_at.isoformat(),
            "payload": self.payload,
        }
