"""Reactions to domain events delivered from the bus (at least once, in any order)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.db.tables import lead_activity_events, leads
from leadcrm.domain.events import LEAD_CREATED
from leadcrm.ids import uuid7

logger = logging.getLogger(__name__)

LEAD_CREATED_ACTIVITY = "lead_created"


def handle_event(conn: Connection, detail_type: str, detail: dict[str, Any]) -> bool:
    """Apply one event; True when it changed something. Unknown types are acknowledged and ignored."""
    handler = _HANDLERS.get(detail_type)
    if handler is None:
        logger.info("ignoring event type", extra={"detailType": detail_type})
        return False
    return handler(conn, detail)


def _record_lead_created(conn: Connection, detail: dict[str, Any]) -> bool:
    """Write `lead_created` on the lead's timeline once per event id, however often it is delivered."""
    organization_id = uuid.UUID(detail["organizationId"])
    lead_id = uuid.UUID(detail["payload"]["leadId"])
    exists = conn.execute(
        select(leads.c.id).where(leads.c.id == lead_id, leads.c.organization_id == organization_id)
    ).first()
    if exists is None:  # erased before the event arrived: nothing to record
        return False
    inserted = conn.execute(
        pg_insert(lead_activity_events)
        .values(
            id=uuid7(),
            organization_id=organization_id,
            lead_id=lead_id,
            type=LEAD_CREATED_ACTIVITY,
            payload={"source": detail["payload"].get("source"), "eventId": detail["eventId"]},
            source_event_id=uuid.UUID(detail["eventId"]),
        )
        .on_conflict_do_nothing(
            index_elements=["source_event_id", "type"], index_where=lead_activity_events.c.source_event_id.isnot(None)
        )
        .returning(lead_activity_events.c.id)
    ).first()
    return inserted is not None


_HANDLERS = {LEAD_CREATED: _record_lead_created}
