"""Reactions to events delivered from the bus (at least once, in any order).

Two shapes arrive. Our own events (source `leadcrm`) carry the outbox envelope as `detail`: eventId, type,
organizationId, aggregateId, payload. Platform events (source `platform.*`, e.g. minisite events) carry
the platform's own detail, with no eventId/payload wrapper: each handler reads the shape of its type.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import Connection, DateTime, Text, Uuid, cast, func, literal, null, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.analytics import attribution
from leadcrm.deals import owner_departure
from leadcrm.directory.tables import organizations
from leadcrm.leads import conversion, returning
from leadcrm.leads.rules.returning import LEAD_RETURNED_EVENT, MEMBERSHIP_JOIN_RELEASED
from leadcrm.leads.tables import lead_activity_events, leads, minisite_events
from leadcrm.platform.events import LEAD_CREATED, LEAD_STATUS_CHANGED
from leadcrm.platform.ids import parse_uuid, uuid7
from leadcrm.qualification import scoring
from leadcrm.work import follow_ups
from leadcrm.work import task_closing as lead_task_closing

logger = logging.getLogger(__name__)

LEAD_CREATED_ACTIVITY = "lead_created"


def handle_event(conn: Connection, detail_type: str, detail: dict[str, Any]) -> bool:
    """Apply one event; True when it changed something. Unknown types are acknowledged and ignored."""
    handler = _HANDLERS.get(detail_type)
    # Events about a lead whose scoring inputs changed also rescore it (qualification.scoring), beside their handler.
    rescores = detail_type in scoring.RESCORING_EVENTS
    if handler is None and not rescores:
        logger.info("ignoring event type", extra={"detailType": detail_type})
        return False
    changed = handler(conn, detail) if handler is not None else False
    if rescores:
        changed = scoring.handle_lead_changed(conn, detail) or changed
    return changed


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


# --- platform: minisite events ----------------------------------------------------------------------------

MINISITE_EVENT_PUBLISHED = "minisite_event.published"
MINISITE_EVENT_UPDATED = "minisite_event.updated"
MINISITE_EVENT_ARCHIVED = "minisite_event.archived"
MAX_MINISITE_EVENT_TITLE = 500


def _upsert_minisite_event(conn: Connection, detail: dict[str, Any], *, archive: bool) -> bool:
    """Keep the organization's minisite events (what a public capture's minisiteEventId is checked against).

    Platform detail: {organizationId, eventId, title}. Idempotent upsert keyed by the event id; a redelivery
    or a late `updated` changes nothing it should not: the title follows the latest delivery, an archive
    keeps its first time, and no delivery moves an event to another organization. Malformed details and
    unknown organizations are acknowledged and dropped (a retry could never make them valid).
    """
    organization_id = parse_uuid(str(detail.get("organizationId", "")))
    event_id = parse_uuid(str(detail.get("eventId", "")))
    title = str(detail.get("title") or "").strip()[:MAX_MINISITE_EVENT_TITLE] or "Minisite event"
    if organization_id is None or event_id is None:
        logger.warning("minisite event without valid ids dropped")
        return False
    known_organization = select(organizations.c.id).where(organizations.c.id == organization_id).exists()
    values = select(
        literal(event_id, Uuid),
        literal(organization_id, Uuid),
        literal(title, Text),
        func.now() if archive else cast(null(), DateTime(timezone=True)),
    ).where(known_organization)
    statement = pg_insert(minisite_events).from_select(["id", "organization_id", "title", "archived_at"], values)
    changes: dict[str, Any] = {"title": statement.excluded.title, "updated_at": func.now()}
    if archive:
        changes["archived_at"] = func.coalesce(minisite_events.c.archived_at, func.now())
    written = conn.execute(
        statement.on_conflict_do_update(
            index_elements=["id"],
            set_=changes,
            where=minisite_events.c.organization_id == statement.excluded.organization_id,
        ).returning(minisite_events.c.id)
    ).first()
    if written is None:
        logger.warning("minisite event dropped: unknown organization or not its event", extra={"id": str(event_id)})
    return written is not None


def _minisite_event_published(conn: Connection, detail: dict[str, Any]) -> bool:
    return _upsert_minisite_event(conn, detail, archive=False)


def _minisite_event_archived(conn: Connection, detail: dict[str, Any]) -> bool:
    return _upsert_minisite_event(conn, detail, archive=True)


_HANDLERS = {
    LEAD_CREATED: _record_lead_created,
    MINISITE_EVENT_PUBLISHED: _minisite_event_published,
    MINISITE_EVENT_UPDATED: _minisite_event_published,
    MINISITE_EVENT_ARCHIVED: _minisite_event_archived,
    conversion.MEMBERSHIP_SELF_SIGNUP: conversion.handle_membership_self_signup,
    conversion.ENTITLEMENT_ACTIVATED: conversion.handle_entitlement_activated,
    MEMBERSHIP_JOIN_RELEASED: returning.handle_join_released,
    LEAD_STATUS_CHANGED: lead_task_closing.handle_lead_status_changed,
    LEAD_RETURNED_EVENT: follow_ups.sync_return_call,
    attribution.CONVERSATION_INBOUND_RECEIVED: attribution.handle_inbound_received,
    owner_departure.MEMBERSHIP_STATUS_CHANGED: owner_departure.handle_membership_status_changed,
}
