"""Helpers for the capture, staff-create, campaign and tag tests: public calls and reads of what was written."""

from __future__ import annotations

import os
import uuid
from typing import Any

from sqlalchemy import func, insert, select

from leadcrm.leads.tables import lead_activity_events, lead_campaigns, lead_receipts, leads, minisite_events
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.work.tables import tasks
from tests.support.api import ApiResponse, invoke
from tests.support.events import http_api_event


def fresh_ip() -> str:
    """A client address of its own (IPv6 documentation range), so tests never share a throttling bucket."""
    return f"2001:db8::{os.urandom(2).hex()}:{os.urandom(2).hex()}:{os.urandom(2).hex()}"


def capture_path(org_id: Any) -> str:
    return f"/leads/organization/{org_id}"


def capture(org_id: Any, body: Any, *, ip: str | None = None, headers: dict[str, str] | None = None) -> ApiResponse:
    """`POST /leads/organization/{orgId}` as API Gateway delivers it: no authorizer, the client's source IP."""
    event = http_api_event("POST", capture_path(org_id), sub=None, body=body, headers=headers, authorizer=False)
    event["headers"].pop("authorization", None)
    event["requestContext"]["http"]["sourceIp"] = ip or fresh_ip()
    return invoke(event)


def lead_rows(org_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(leads).where(leads.c.organization_id == org_id).order_by(leads.c.id)).mappings()
        return [dict(r) for r in rows]


def lead_count(org_id: uuid.UUID) -> int:
    with get_engine().connect() as conn:
        return conn.execute(
            select(func.count()).select_from(leads).where(leads.c.organization_id == org_id)
        ).scalar_one()


def receipts_of(org_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_receipts).where(lead_receipts.c.organization_id == org_id).order_by(lead_receipts.c.received_at)
        ).mappings()
        return [dict(r) for r in rows]


def activities_of(lead_id: Any, activity_type: str | None = None) -> list[dict[str, Any]]:
    query = select(lead_activity_events).where(lead_activity_events.c.lead_id == uuid.UUID(str(lead_id)))
    if activity_type is not None:
        query = query.where(lead_activity_events.c.type == activity_type)
    with get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(query.order_by(lead_activity_events.c.occurred_at)).mappings()]


def tasks_of(org_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(select(tasks).where(tasks.c.organization_id == org_id)).mappings()]


def campaigns_of(org_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(lead_campaigns).where(lead_campaigns.c.organization_id == org_id)).mappings()
        return [dict(r) for r in rows]


def make_campaign(
    org_id: uuid.UUID,
    *,
    name: str = "Spring promo",
    channel: str = "manual",
    external_ref: str | None = None,
    archived: bool = False,
) -> uuid.UUID:
    campaign_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_campaigns).values(
                id=campaign_id,
                organization_id=org_id,
                name=name,
                channel=channel,
                external_ref=external_ref,
                archived_at=func.now() if archived else None,
            )
        )
    return campaign_id


def make_minisite_event(
    org_id: uuid.UUID, *, title: str = "Open day", campaign_id: uuid.UUID | None = None
) -> uuid.UUID:
    event_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(
            insert(minisite_events).values(id=event_id, organization_id=org_id, title=title, campaign_id=campaign_id)
        )
    return event_id


def minisite_event_row(event_id: uuid.UUID) -> dict[str, Any] | None:
    with get_engine().connect() as conn:
        row = conn.execute(select(minisite_events).where(minisite_events.c.id == event_id)).mappings().first()
        return None if row is None else dict(row)
