"""Data for the analytics and attribution tests: leads with the creation time, status history, first human
response and touches the figures read, written directly (the API would not let a test set created_at)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, select

from leadcrm.leads.tables import lead_activity_events, lead_status_events, lead_touches, leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.api import ApiResponse, call_api
from tests.support.lead_list_helpers import Board


def history_lead(
    board: Board,
    created_at: datetime,
    history: Sequence[tuple[str, datetime]] = (),
    *,
    source: str = "manual",
    campaign_id: uuid.UUID | None = None,
    is_test: bool = False,
    responded_after: timedelta | None = None,
    first_touch: bool = True,
) -> uuid.UUID:
    """A lead created at `created_at` as new, then moved through `history` [(status, at), …] (its status is
    the last one), with its status events, and its first touch (the campaign's) at creation."""
    lead_id = uuid7()
    status = history[-1][0] if history else "new"
    events = [("new", created_at), *history]
    with get_engine().begin() as conn:
        conn.execute(
            insert(leads).values(
                id=lead_id,
                organization_id=board.organization_id,
                name="Analytics lead",
                source=source,
                status=status,
                pipeline_id=board.pipeline_id,
                stage_id=board.stages[status],
                campaign_id=campaign_id,
                is_test=is_test,
                first_human_response_at=created_at + responded_after if responded_after is not None else None,
                created_at=created_at,
                updated_at=created_at,
                status_changed_at=events[-1][1],
            )
        )
        conn.execute(
            insert(lead_status_events),
            [
                {
                    "id": uuid7(),
                    "organization_id": board.organization_id,
                    "lead_id": lead_id,
                    "from_status": events[i - 1][0] if i else None,
                    "to_status": to_status,
                    "from_stage_id": board.stages[events[i - 1][0]] if i else None,
                    "to_stage_id": board.stages[to_status],
                    "changed_at": at,
                }
                for i, (to_status, at) in enumerate(events)
            ],
        )
        if first_touch:
            conn.execute(
                insert(lead_touches).values(
                    id=uuid7(),
                    organization_id=board.organization_id,
                    lead_id=lead_id,
                    kind="form",
                    channel=source if campaign_id else "direct_unknown",
                    is_first=True,
                    occurred_at=created_at,
                    campaign_id=campaign_id,
                )
            )
    return lead_id


def add_touch(
    board: Board, lead_id: uuid.UUID, at: datetime, campaign_id: uuid.UUID | None, *, kind: str = "ad"
) -> None:
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_touches).values(
                id=uuid7(),
                organization_id=board.organization_id,
                lead_id=lead_id,
                kind=kind,
                channel="facebook",
                occurred_at=at,
                campaign_id=campaign_id,
            )
        )


def touches_of(lead_id: Any) -> list[dict[str, Any]]:
    """The lead's touches, the first one first, then oldest first."""
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_touches)
            .where(lead_touches.c.lead_id == uuid.UUID(str(lead_id)))
            .order_by(lead_touches.c.is_first.desc(), lead_touches.c.occurred_at, lead_touches.c.id)
        ).mappings()
        return [dict(r) for r in rows]


def timeline_entries(lead_id: Any, activity_type: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_activity_events).where(
                lead_activity_events.c.lead_id == uuid.UUID(str(lead_id)), lead_activity_events.c.type == activity_type
            )
        ).mappings()
        return [dict(r) for r in rows]


def analytics_path(org_id: Any, view: str | None = None) -> str:
    base = f"/organizations/{org_id}/leads/analytics"
    return base if view is None else f"{base}/{view}"


def get_analytics(sub: str, org_id: Any, view: str | None = None, **query: str) -> ApiResponse:
    return call_api("GET", analytics_path(org_id, view), sub=sub, query=query or None)


def spend_path(org_id: Any, campaign_id: Any, spend_id: Any | None = None) -> str:
    base = f"/organizations/{org_id}/leads/campaigns/{campaign_id}/spend"
    return base if spend_id is None else f"{base}/{spend_id}"
