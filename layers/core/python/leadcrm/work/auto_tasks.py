"""The auto-task of a new lead (spec G1 step 7, also on G2): the owner is asked to contact it tomorrow.

The task is the lead's follow-up (spec "One object"): the lead's INSERT carries the task's INSERT as a CTE
and writes the lead's seed follow-up (a call due at the lead's created_at,
`work.follow_ups.intake_seed_values_sql`), which the task stands for; the seed reads the task's RETURNING,
so no task (no owner, a conflict) means no seed either.

It never blocks the create (spec "Auto-task never blocks lead create"). The task shares the lead's statement
(no SAVEPOINT round trips), so it is built to be unable to fail there: tomorrow is computed here in the
organization's timezone (an unknown zone: no task, logged), the owner is read by the statement itself (none:
no row), the task's id is new and so is its lead (the one-open-contact-task index cannot conflict); a builder
that raises is logged and the lead is created without its task.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import CTE, Date, Text, Uuid, insert, literal, select, true

from leadcrm.directory.rules import MembershipStatus, Role
from leadcrm.directory.tables import memberships
from leadcrm.leads.messages import CreationWrites
from leadcrm.platform import clock
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.ids import uuid7
from leadcrm.platform.timezones import is_iana_timezone
from leadcrm.work.follow_ups import intake_seed_values_sql, intake_seeds_values_sql
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

CONTACT_LEAD_TASK = "contact_lead"
_TASK_COLUMNS = [
    tasks.c.id,
    tasks.c.organization_id,
    tasks.c.type,
    tasks.c.title,
    tasks.c.priority,
    tasks.c.source,
    tasks.c.due_date,
    tasks.c.assignee_user_id,
    tasks.c.linked_lead_id,
]


def contact_task_writes(
    organization_id: uuid.UUID, lead_id: uuid.UUID, title: str, timezone: str | None
) -> CreationWrites | None:
    """The task and the seed, for the new lead's INSERT; None when they cannot be built (logged, not raised)."""
    try:
        if not timezone or not is_iana_timezone(timezone):
            raise ValueError(f"unknown timezone {timezone!r}")
        tomorrow_there = clock.now().astimezone(ZoneInfo(timezone)).date() + timedelta(days=1)
        task = _contact_task_insert(organization_id, lead_id, title, tomorrow_there).cte("intake_task")
    except Exception:
        logger.exception("auto-task not created", extra={"leadId": str(lead_id)})
        return None
    return CreationWrites(lead_values=intake_seed_values_sql(task), statements=(task,))


def contact_tasks_writes(
    organization_id: uuid.UUID, titles: Mapping[uuid.UUID, str], timezone: str | None, lead_id: Any
) -> CreationWrites | None:
    """`contact_task_writes` for many new leads of one organization inserted by one statement (`lead_id`:
    the id column of its rows): one INSERT of every task, each lead's seed read from its own task."""
    try:
        if not timezone or not is_iana_timezone(timezone):
            raise ValueError(f"unknown timezone {timezone!r}")
        tomorrow_there = clock.now().astimezone(ZoneInfo(timezone)).date() + timedelta(days=1)
        rows = [{"id": uuid7(), "lead_id": lead, "title": title} for lead, title in titles.items()]
        src = recordset("intake_task_rows", "intake_task_rows", rows, {"id": Uuid, "lead_id": Uuid, "title": Text})
        owner = _owner(organization_id)
        row = select(
            src.c.id,
            literal(organization_id),
            literal(CONTACT_LEAD_TASK),
            src.c.title,
            literal("high"),
            literal("auto"),
            literal(tomorrow_there, Date),
            owner.c.user_id,
            src.c.lead_id,
        ).select_from(src.join(owner, true()))
        task = insert(tasks).from_select(_TASK_COLUMNS, row).returning(tasks.c.linked_lead_id).cte("intake_tasks")
    except Exception:
        logger.exception("auto-tasks not created", extra={"leadIds": [str(lead) for lead in titles]})
        return None
    return CreationWrites(lead_values=intake_seeds_values_sql(task, lead_id), statements=(task,))


def _owner(organization_id: uuid.UUID) -> CTE:
    """The oldest active owner membership's user: no row when the organization has no owner (no task)."""
    return (
        select(memberships.c.user_id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.role == Role.OWNER.value,
            memberships.c.status == MembershipStatus.ACTIVE.value,
            memberships.c.deleted_at.is_(None),
        )
        .order_by(memberships.c.created_at, memberships.c.id)
        .limit(1)
        .cte("intake_owner")
    )


def _contact_task_insert(organization_id: uuid.UUID, lead_id: uuid.UUID, title: str, due_date: date) -> Any:
    """One INSERT … SELECT from the owner, RETURNING the row it wrote: no owner means none."""
    owner = _owner(organization_id)
    row = select(
        literal(uuid7()),
        literal(organization_id),
        literal(CONTACT_LEAD_TASK),
        literal(title),
        literal("high"),
        literal("auto"),
        literal(due_date, Date),
        owner.c.user_id,
        literal(lead_id),
    )
    # Core insert, not postgresql.insert: SQLAlchemy caches the create's compiled statement only with it.
    return insert(tasks).from_select(_TASK_COLUMNS, row).returning(tasks.c.id)
