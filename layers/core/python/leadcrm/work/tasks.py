"""Tasks (staff): list, create, update, complete, cancel (spec "Lead tasks, Assigned to me and the urgent prompt").

Every write that touches a task linked to a lead goes through `work.follow_ups`, which takes the lead's
row before the task's (`follow_up_state.lock_task`) and keeps the lead's follow-up in step with the task that
stands for it: a contact_lead task created for a lead merges into the lead's follow-up; completing,
cancelling or rescheduling a task that stands for the follow-up clears or moves it. This module writes only
the task's own fields (title, description, priority, assignee, status, due).

Lists page by keyset on (due_date, id), due dates first (no due date last), and carry the linked lead's id,
name and phone from the same query.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, time
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Date,
    Select,
    Text,
    Uuid,
    and_,
    cast,
    func,
    insert,
    or_,
    select,
    update,
)

from leadcrm.directory.member_reads import CALLER_USER_ID, Gate, data_column, member_statement, read_as_member
from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.directory.tables import organizations
from leadcrm.leads.tables import leads
from leadcrm.platform.assignee import Assignee
from leadcrm.platform.db.filters import assignee_condition
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.ids import parse_uuid, uuid7
from leadcrm.platform.keyset import decode_keyset, encode_keyset
from leadcrm.work import follow_up_state, follow_ups
from leadcrm.work.rules.follow_ups import TaskDue
from leadcrm.work.tables import tasks

OPEN_STATUSES = follow_up_state.OPEN_TASK_STATUSES


class TaskType(StrEnum):
    GENERAL = "general"
    CONTACT_LEAD = "contact_lead"
    CALL = "call"
    EMAIL = "email"
    MEETING = "meeting"
    OTHER = "other"


class TaskStatusFilter(StrEnum):
    OPEN = "open"  # pending or in_progress (the default)
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    ALL = "all"


TASK_COLUMNS = (
    *tasks.c,
    leads.c.name.label("lead_name"),
    leads.c.phone.label("lead_phone"),
)


def _task_select() -> Any:
    return select(*TASK_COLUMNS).select_from(
        tasks.outerjoin(
            leads, and_(leads.c.id == tasks.c.linked_lead_id, leads.c.organization_id == tasks.c.organization_id)
        )
    )


def read_task(conn: Connection, organization_id: uuid.UUID, task_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            _task_select().where(
                tasks.c.organization_id == organization_id, tasks.c.id == task_id, tasks.c.deleted_at.is_(None)
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise follow_up_state.task_not_found()
    return dict(row)


# -- list ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskFilters:
    type: TaskType | None = None
    status: TaskStatusFilter = TaskStatusFilter.OPEN
    lead_id: uuid.UUID | None = None
    assignee: Assignee | None = None
    # `assignee=me` left to the statement: a member read knows the caller's user id only as it runs.
    assigned_to_caller: bool = False


TaskPage = tuple[list[dict[str, Any]], str | None]


def list_tasks(conn: Connection, actor: Actor, filters: TaskFilters, *, cursor: str | None, limit: int) -> TaskPage:
    """One page (one query) and the cursor of the next, None on the last page."""
    query = _page_query(actor.organization_id, filters, cursor=cursor, limit=limit, caller_user_id=actor.user_id)
    return _page([dict(r) for r in conn.execute(query).mappings()], limit)


def list_tasks_as_member(
    conn: Connection,
    auth_subject: str,
    organization_id: uuid.UUID,
    gate: Gate,
    filters: TaskFilters,
    *,
    cursor: str | None,
    limit: int,
) -> tuple[Actor, TaskPage]:
    """The caller (refused as resolve_actor and `gate` refuse) and `list_tasks`' page, in one statement. A
    cursor that is not ours is refused before anything is read."""
    query = _page_query(organization_id, filters, cursor=cursor, limit=limit, caller_user_id=CALLER_USER_ID)
    read = read_as_member(
        conn,
        member_statement(query, order_by=(data_column("due_date").asc().nulls_last(), data_column("id"))),
        auth_subject=auth_subject,
        organization_id=organization_id,
        gate=gate,
    )
    return read.actor, _page(read.rows, limit)


def _page_query(
    organization_id: uuid.UUID,
    filters: TaskFilters,
    *,
    cursor: str | None,
    limit: int,
    caller_user_id: uuid.UUID | ColumnElement[Any] | None,
) -> Select:
    conditions: list[Any] = [tasks.c.organization_id == organization_id, tasks.c.deleted_at.is_(None)]
    if filters.status is TaskStatusFilter.OPEN:
        conditions.append(tasks.c.status.in_(OPEN_STATUSES))
    elif filters.status is not TaskStatusFilter.ALL:
        conditions.append(tasks.c.status == filters.status.value)
    if filters.type is not None:
        conditions.append(tasks.c.type == filters.type.value)
    if filters.lead_id is not None:
        conditions.append(tasks.c.linked_lead_id == filters.lead_id)
    if filters.assignee is not None:
        conditions.append(assignee_condition(tasks.c.assignee_user_id, filters.assignee))
    if filters.assigned_to_caller:
        conditions.append(tasks.c.assignee_user_id == caller_user_id)
    if cursor is not None:
        conditions.append(_after(cursor))
    return _task_select().where(*conditions).order_by(tasks.c.due_date.asc().nulls_last(), tasks.c.id).limit(limit + 1)


def _page(rows: list[dict[str, Any]], limit: int) -> TaskPage:
    page = rows[:limit]
    next_cursor = None
    if len(rows) > limit:
        last = page[-1]
        next_cursor = encode_keyset([last["due_date"].isoformat() if last["due_date"] else "", str(last["id"])])
    return page, next_cursor


def _after(cursor: str) -> Any:
    """Rows after the cursor's (due_date, id) in the list's order (due dates ascending, none last, then id)."""
    raw_due, raw_id = decode_keyset(cursor, 2)
    last_id = parse_uuid(raw_id)
    try:
        last_due = date.fromisoformat(raw_due) if raw_due else None
    except ValueError:
        last_due = None
        last_id = None
    if last_id is None:
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
    if last_due is None:
        return and_(tasks.c.due_date.is_(None), tasks.c.id > last_id)
    return or_(
        tasks.c.due_date > last_due,
        and_(tasks.c.due_date == last_due, tasks.c.id > last_id),
        tasks.c.due_date.is_(None),
    )


# -- create --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewTask:
    title: str
    description: str | None = None
    type: TaskType = TaskType.GENERAL
    priority: str = "medium"
    due_date: date | None = None
    due_time: time | None = None
    assignee_user_id: uuid.UUID | None = None
    linked_lead_id: uuid.UUID | None = None


def create_task(uow: UnitOfWork, actor: Actor, new: NewTask) -> tuple[dict[str, Any], bool]:
    """The task and whether it merged into the lead's existing open contact task (a contact_lead task for a
    lead is the lead's follow-up: `follow_ups.create_linked_contact_task`). 400 ASSIGNEE_NOT_STAFF, 404
    LEAD_NOT_FOUND for a lead that is not the organization's."""
    conn = uow.connection
    if new.assignee_user_id is not None:
        require_assignable_staff(conn, actor.organization_id, new.assignee_user_id)
    if new.type is TaskType.CONTACT_LEAD and new.linked_lead_id is not None:
        fields = follow_ups.TaskFields(
            title=new.title,
            description=new.description,
            priority=new.priority,
            assignee_user_id=new.assignee_user_id,
        )
        task_id, merged = follow_ups.create_linked_contact_task(
            conn, actor, new.linked_lead_id, TaskDue(new.due_date, new.due_time), fields
        )
        return read_task(conn, actor.organization_id, task_id), merged
    if new.linked_lead_id is not None:
        _require_lead(conn, actor, new.linked_lead_id)
    task_id = uuid7()
    conn.execute(
        insert(tasks).values(
            id=task_id,
            organization_id=actor.organization_id,
            type=new.type.value,
            title=new.title,
            description=new.description,
            priority=new.priority,
            source="manual",
            due_date=new.due_date,
            due_time=new.due_time,
            assignee_user_id=new.assignee_user_id or actor.user_id,
            linked_lead_id=new.linked_lead_id,
            created_by_user_id=actor.user_id,
        )
    )
    return read_task(conn, actor.organization_id, task_id), False


def _require_lead(conn: Connection, actor: Actor, lead_id: uuid.UUID) -> None:
    found = conn.execute(
        select(leads.c.id)
        .where(leads.c.organization_id == actor.organization_id, leads.c.id == lead_id)
        .with_for_update(read=True, key_share=True)
    ).first()
    if found is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")


# -- update / complete / cancel --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskChange:
    """The fields a PATCH sent (only those: `changes` maps column names to values, None clears)."""

    changes: dict[str, Any] = field(default_factory=dict)


def _task_closed(task: dict[str, Any]) -> Conflict:
    return Conflict("The task is already closed.", code="TASK_CLOSED", status=task["status"])


def update_task(uow: UnitOfWork, actor: Actor, task_id: uuid.UUID, change: TaskChange) -> dict[str, Any]:
    """Edits an open task. Rescheduling a task that stands for its lead's follow-up moves the follow-up;
    such a task keeps a due date (400 FOLLOW_UP_TASK_NEEDS_DUE_DATE). 409 TASK_CLOSED for a closed task."""
    conn = uow.connection
    task, state = follow_up_state.lock_task(conn, actor.organization_id, task_id)
    if task["status"] not in OPEN_STATUSES:
        raise _task_closed(task)
    values = {name: value for name, value in change.changes.items() if task[name] != value}
    if values.get("assignee_user_id") is not None:
        require_assignable_staff(conn, actor.organization_id, values["assignee_user_id"])
    if "due_date" in values or "due_time" in values:
        due = TaskDue(values.get("due_date", task["due_date"]), values.get("due_time", task["due_time"]))
        if follow_ups.is_follow_up_task(task, state):
            if due.due_date is None:
                raise BadRequest(
                    "The task is the lead's follow-up and needs a due date; cancel it to drop the follow-up.",
                    code="FOLLOW_UP_TASK_NEEDS_DUE_DATE",
                )
            follow_ups.reschedule_task(conn, actor, task, state, due)
    if values:
        conn.execute(update(tasks).where(tasks.c.id == task_id).values(**values, updated_at=sql_now()))
    return read_task(conn, actor.organization_id, task_id)


def close_task(uow: UnitOfWork, actor: Actor, task_id: uuid.UUID, status: str) -> dict[str, Any]:
    """Completes or cancels a task; the same again changes nothing, the other is 409 TASK_CLOSED. A task that
    stands for its lead's follow-up clears the follow-up."""
    conn = uow.connection
    task, state = follow_up_state.lock_task(conn, actor.organization_id, task_id)
    if task["status"] == status:
        return read_task(conn, actor.organization_id, task_id)
    if task["status"] not in OPEN_STATUSES:
        raise _task_closed(task)
    follow_ups.close_task(conn, actor, task, state, status)
    return read_task(conn, actor.organization_id, task_id)


# -- tasks the system opens (scheduled jobs) -------------------------------------------------------------------

_SYSTEM_TASK_COLUMNS = {
    "id": Uuid,
    "organization_id": Uuid,
    "type": Text,
    "title": Text,
    "priority": Text,
    "source": Text,
    "assignee_user_id": Uuid,
    "linked_lead_id": Uuid,
    "linked_deal_id": Uuid,
}


def create_system_tasks(conn: Connection, new_tasks: list[dict[str, Any]]) -> int:
    """Many tasks a job opens (each row names the columns above; no actor), due today in each task's
    organization's timezone, in ONE statement whatever their number. Not for contact_lead tasks: those are a
    lead's follow-up and go through `work.follow_ups`."""
    if not new_tasks:
        return 0
    assert all(t["type"] != TaskType.CONTACT_LEAD for t in new_tasks)
    source = recordset("system_tasks", "system_tasks", new_tasks, _SYSTEM_TASK_COLUMNS)
    today_there = cast(func.timezone(organizations.c.timezone, sql_now()), Date)
    rows = select(*(source.c[n] for n in _SYSTEM_TASK_COLUMNS), today_there).select_from(
        source.join(organizations, organizations.c.id == source.c.organization_id)
    )
    inserted = conn.execute(
        insert(tasks).from_select([*_SYSTEM_TASK_COLUMNS, "due_date"], rows).returning(tasks.c.id)
    ).all()
    return len(inserted)
