"""Helpers for the returning-leads tests: closing leads the way the board leaves them, reading what a return
wrote (the lead's return columns, its history, the outbox), and reopening through the API."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, insert, select, update

from leadcrm.directory.tables import users
from leadcrm.leads.tables import lead_activity_events, lead_status_events, leads
from leadcrm.pipelines.tables import pipeline_stages
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.platform.tables import outbox
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.factories import StaffCaller
from tests.support.lead_moves_helpers import Pipeline


def insert_lead(org_id: uuid.UUID, pipeline: Pipeline, category: str = "lost", **columns: Any) -> uuid.UUID:
    """One lead written straight onto the first `category` stage of the pipeline (lost ones with a reason);
    `columns` sets anything else (name, email, phone, note, archived_at, assigned_to_user_id, ...)."""
    lead_id = uuid7()
    values = {
        "id": lead_id,
        "organization_id": org_id,
        "name": "Ada Lovelace",
        "status": category,
        "pipeline_id": pipeline.id,
        "stage_id": pipeline.stage(category),
        "lost_reason": "no_answer" if category == "lost" else None,
        **columns,
    }
    with get_engine().begin() as conn:
        conn.execute(insert(leads).values(**values))
    return lead_id


def close_lead(lead_id: Any, category: str = "lost", *, lost_reason: str | None = "no_answer", **columns: Any) -> None:
    """Puts the lead on the first stage of `category` in its own pipeline (status and stage together, as a
    move leaves them), plus any other columns given."""
    lead_id = uuid.UUID(str(lead_id))
    with get_engine().begin() as conn:
        pipeline_id = conn.execute(select(leads.c.pipeline_id).where(leads.c.id == lead_id)).scalar_one()
        stage_id = conn.execute(
            select(pipeline_stages.c.id)
            .where(pipeline_stages.c.pipeline_id == pipeline_id, pipeline_stages.c.category == category)
            .order_by(pipeline_stages.c.position)
            .limit(1)
        ).scalar_one()
        conn.execute(
            update(leads)
            .where(leads.c.id == lead_id)
            .values(
                status=category,
                stage_id=stage_id,
                lost_reason=lost_reason if category == "lost" else None,
                **columns,
            )
        )


def archive_lead(lead_id: Any) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(leads).where(leads.c.id == uuid.UUID(str(lead_id))).values(archived_at=func.now()))


def lead_state(lead_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(leads).where(leads.c.id == uuid.UUID(str(lead_id)))).mappings().one())


def status_events_of(lead_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_status_events)
            .where(lead_status_events.c.lead_id == uuid.UUID(str(lead_id)))
            .order_by(lead_status_events.c.changed_at, lead_status_events.c.id)
        ).mappings()
        return [dict(r) for r in rows]


def timeline_of(lead_id: Any, activity_type: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_activity_events)
            .where(
                lead_activity_events.c.lead_id == uuid.UUID(str(lead_id)),
                lead_activity_events.c.type == activity_type,
            )
            .order_by(lead_activity_events.c.occurred_at, lead_activity_events.c.id)
        ).mappings()
        return [dict(r) for r in rows]


def outbox_of(lead_id: Any, event_type: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(outbox)
            .where(outbox.c.aggregate_id == uuid.UUID(str(lead_id)), outbox.c.type == event_type)
            .order_by(outbox.c.occurred_at)
        ).mappings()
        return [dict(r) for r in rows]


def reopen(caller: StaffCaller, lead_id: Any, body: Any = None, *, org_id: Any = None, **kwargs: Any) -> ApiResponse:
    """`POST …/leads/{leadId}/reopen` as `caller`, in their organization unless `org_id` names another."""
    path = f"{leads_path(org_id or caller.org_id, lead_id)}/reopen"
    return call_api("POST", path, sub=caller.sub, body=body, **kwargs)


def make_person(
    *,
    email: str | None = None,
    phone: str | None = None,
    first_name: str | None = "Dana",
    last_name: str | None = "Cohen",
    kind: str = "account",
) -> uuid.UUID:
    """A platform user with the contact details identity matching reads (a released join is about one)."""
    user_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(
            insert(users).values(
                id=user_id,
                auth_subject=f"user_{user_id.hex}",
                email=email,
                phone=phone,
                first_name=first_name,
                last_name=last_name,
                kind=kind,
            )
        )
    return user_id


def leads_of(org_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(leads).where(leads.c.organization_id == org_id).order_by(leads.c.created_at))
        return [dict(r) for r in rows.mappings()]
