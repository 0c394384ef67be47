"""Reading leads: one lead with its timeline, and keyset-paginated lists."""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, literal, select, union_all

from leadcrm.db.tables import lead_activity_events, lead_status_events, leads
from leadcrm.errors import BadRequest, NotFound
from leadcrm.services.leads import LEAD_COLUMNS

TIMELINE_LIMIT = 100


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None


def get_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The lead with its timeline, newest first. Another organization's lead is simply not found."""
    row = (
        conn.execute(select(*LEAD_COLUMNS).where(leads.c.id == lead_id, leads.c.organization_id == organization_id))
        .mappings()
        .first()
    )
    if row is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    return {**row, "timeline": _timeline(conn, organization_id, lead_id)}


def _timeline(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> list[dict[str, Any]]:
    status_rows = select(
        lead_status_events.c.id,
        literal("status_changed").label("kind"),
        literal("status_changed").label("type"),
        lead_status_events.c.changed_at.label("at"),
        lead_status_events.c.actor_user_id,
        lead_status_events.c.from_status,
        lead_status_events.c.to_status,
        literal(None).label("payload"),
    ).where(lead_status_events.c.organization_id == organization_id, lead_status_events.c.lead_id == lead_id)
    activity_rows = select(
        lead_activity_events.c.id,
        literal("activity").label("kind"),
        lead_activity_events.c.type,
        lead_activity_events.c.occurred_at.label("at"),
        lead_activity_events.c.actor_user_id,
        literal(None).label("from_status"),
        literal(None).label("to_status"),
        lead_activity_events.c.payload,
    ).where(lead_activity_events.c.organization_id == organization_id, lead_activity_events.c.lead_id == lead_id)
    merged = union_all(status_rows, activity_rows).subquery()
    rows = (
        conn.execute(select(merged).order_by(merged.c.at.desc(), merged.c.id.desc()).limit(TIMELINE_LIMIT))
        .mappings()
        .all()
    )
    return [dict(r) for r in rows]


def list_leads(
    conn: Connection, organization_id: uuid.UUID, *, limit: int, cursor: str | None, status: str | None = None
) -> Page:
    """Newest first, keyset-paginated on the UUIDv7 id (time-ordered): stable under concurrent inserts."""
    query = select(*LEAD_COLUMNS).where(leads.c.organization_id == organization_id)
    if status:
        query = query.where(leads.c.status == status)
    if cursor:
        query = query.where(leads.c.id < decode_cursor(cursor))
    rows = conn.execute(query.order_by(leads.c.id.desc()).limit(limit + 1)).mappings().all()
    items = [dict(r) for r in rows[:limit]]
    next_cursor = encode_cursor(items[-1]["id"]) if len(rows) > limit else None
    return Page(items=items, next_cursor=next_cursor)


def encode_cursor(last_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(last_id.bytes).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return uuid.UUID(bytes=raw)
    except (binascii.Error, ValueError) as error:
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR") from error
