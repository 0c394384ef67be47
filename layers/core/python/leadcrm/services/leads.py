"""Leads: create, read, list."""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, literal, select, union_all

from leadcrm.db.tables import lead_activity_events, lead_status_events, leads
from leadcrm.db.uow import UnitOfWork
from leadcrm.domain.access import Actor
from leadcrm.domain.events import LEAD_CREATED, DomainEvent
from leadcrm.errors import BadRequest, NotFound
from leadcrm.ids import uuid7
from leadcrm.services.pipelines import default_new_stage

TIMELINE_LIMIT = 100

LEAD_COLUMNS = (
    leads.c.id,
    leads.c.organization_id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.locale,
    leads.c.note,
    leads.c.source,
    leads.c.status,
    leads.c.pipeline_id,
    leads.c.stage_id,
    leads.c.campaign_id,
    leads.c.assigned_to_user_id,
    leads.c.is_test,
    leads.c.archived_at,
    leads.c.trial_date,
    leads.c.next_action_at,
    leads.c.next_action_type,
    leads.c.next_action_note,
    leads.c.status_changed_at,
    leads.c.created_at,
    leads.c.updated_at,
)


@dataclass(frozen=True)
class NewLead:
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    locale: str | None = None
    note: str | None = None
    source: str = "manual"
    is_test: bool = False


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None


def create_lead(uow: UnitOfWork, actor: Actor, new: NewLead) -> dict[str, Any]:
    """A lead on the default pipeline's New stage, its first status event, and `lead.created`."""
    conn = uow.connection
    placement = default_new_stage(conn, actor.organization_id)
    lead_id = uuid7()
    row = (
        conn.execute(
            insert(leads)
            .values(
                id=lead_id,
                organization_id=actor.organization_id,
                name=new.name,
                email=new.email,
                phone=new.phone,
                locale=new.locale,
                note=new.note,
                source=new.source,
                is_test=new.is_test,
                status=placement.category.value,
                pipeline_id=placement.pipeline_id,
                stage_id=placement.stage_id,
                created_by_user_id=actor.user_id,
            )
            .returning(*LEAD_COLUMNS)
        )
        .mappings()
        .one()
    )
    conn.execute(
        insert(lead_status_events).values(
            id=uuid7(),
            organization_id=actor.organization_id,
            lead_id=lead_id,
            from_status=None,
            to_status=placement.category.value,
            to_stage_id=placement.stage_id,
            actor_user_id=actor.user_id,
            changed_at=row["created_at"],
        )
    )
    uow.add_event(
        DomainEvent(
            type=LEAD_CREATED,
            organization_id=actor.organization_id,
            aggregate_id=lead_id,
            payload={
                "leadId": str(lead_id),
                "source": new.source,
                "stageId": str(placement.stage_id),
                "actorUserId": str(actor.user_id),
            },
        )
    )
    return dict(row)


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
