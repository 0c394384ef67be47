"""Data for the work queue and urgent prompt tests: leads and tasks with the timestamps the rules read,
written directly (the API would not let a test set created_at or returned_at)."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import insert, update

from leadcrm.directory.tables import organizations
from leadcrm.leads.tables import leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.work.tables import tasks
from tests.support.lead_list_helpers import Board

# Every test pins "now" (services take a `now`); routes use the real clock, so route tests use times
# relative to the real now.
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def attention_lead(board: Board, *, status: str = "contacted", **columns: Any) -> uuid.UUID:
    """A lead on `board` at the stage of `status`, assigned to nobody unless `assigned_to_user_id` says;
    `created_at` defaults to 30 days ago (no arrival reason), other columns as given."""
    lead_id = uuid7()
    created_at = columns.pop("created_at", datetime.now(UTC) - timedelta(days=30))
    with get_engine().begin() as conn:
        conn.execute(
            insert(leads).values(
                id=lead_id,
                organization_id=board.organization_id,
                name=columns.pop("name", "Queue lead"),
                phone=columns.pop("phone", "050-1234567"),
                status=status,
                pipeline_id=board.pipeline_id,
                stage_id=board.stages[status],
                created_at=created_at,
                updated_at=created_at,
                status_changed_at=created_at,
                **columns,
            )
        )
    return lead_id


def set_timezone(organization_id: uuid.UUID, timezone: str) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == organization_id).values(timezone=timezone))


def make_task(
    organization_id: uuid.UUID,
    *,
    assignee: uuid.UUID | None,
    due_date: date | None,
    status: str = "pending",
    type: str = "general",
    linked_lead_id: uuid.UUID | None = None,
    deleted: bool = False,
) -> uuid.UUID:
    task_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(
            insert(tasks).values(
                id=task_id,
                organization_id=organization_id,
                type=type,
                title="Call back",
                status=status,
                due_date=due_date,
                assignee_user_id=assignee,
                linked_lead_id=linked_lead_id,
                deleted_at=datetime.now(UTC) if deleted else None,
            )
        )
    return task_id
