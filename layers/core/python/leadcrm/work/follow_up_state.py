"""The lead as the follow-up pair sees it, read under the pair's locks (lead first, then task: the lock order
of `work.follow_ups`): the state of a lead, the lead's open contact task, a task with its lead."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from sqlalchemy import Connection, and_, select

from leadcrm.directory.tables import organizations
from leadcrm.leads.tables import leads
from leadcrm.platform.errors import NotFound
from leadcrm.work.rules.follow_ups import (
    FollowUp,
    LeadClock,
    TaskDue,
    follow_up_of,
    is_auto_seed,
    organization_zone,
    task_mirrors_follow_up,
)
from leadcrm.work.tables import tasks

CONTACT_LEAD_TASK = "contact_lead"
OPEN_TASK_STATUSES = ("pending", "in_progress")


@dataclass(frozen=True)
class LeadFollowUpState:
    """The lead as the pair sees it, read under the lead's lock."""

    lead_id: uuid.UUID
    organization_id: uuid.UUID
    status: str
    owner_user_id: uuid.UUID | None
    label: str
    follow_up: FollowUp | None
    clock: LeadClock
    zone: tzinfo

    @property
    def is_auto_seed(self) -> bool:
        return is_auto_seed(self.follow_up, self.clock)

    def mirrors(self, task: dict[str, Any]) -> bool:
        return task_mirrors_follow_up(
            self.follow_up, self.clock, TaskDue(task["due_date"], task["due_time"]), self.zone
        )


_STATE_COLUMNS = (
    leads.c.id,
    leads.c.organization_id,
    leads.c.status,
    leads.c.assigned_to_user_id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.next_action_at,
    leads.c.next_action_type,
    leads.c.next_action_note,
    leads.c.created_at,
    leads.c.returned_at,
    organizations.c.timezone,
)


def state_of(row: Any) -> LeadFollowUpState:
    """The state of a lead row read with the lock's statement: the lead columns and `organizations.timezone`
    (`STATE_JOIN`)."""
    return _state_from(row)


def state_join() -> Any:
    """What a lock of the lead joins to read the state with it (organizations.timezone)."""
    return leads.join(organizations, organizations.c.id == leads.c.organization_id)


STATE_EXTRA_COLUMNS = (organizations.c.timezone,)


def _state_from(row: Any) -> LeadFollowUpState:
    label = next((v.strip() for v in (row["name"], row["email"], row["phone"]) if v and v.strip()), "lead")
    return LeadFollowUpState(
        lead_id=row["id"],
        organization_id=row["organization_id"],
        status=row["status"],
        owner_user_id=row["assigned_to_user_id"],
        label=label,
        follow_up=follow_up_of(row["next_action_at"], row["next_action_type"], row["next_action_note"]),
        clock=LeadClock(created_at=row["created_at"], returned_at=row["returned_at"]),
        zone=organization_zone(row["timezone"]),
    )


def _state_query(organization_id: uuid.UUID, lead_id: uuid.UUID) -> Any:
    return (
        select(*_STATE_COLUMNS)
        .select_from(leads.join(organizations, organizations.c.id == leads.c.organization_id))
        .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    )


def lock_lead_state(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> LeadFollowUpState:
    """Lead-side writes: the lead row FOR UPDATE (as `lock_lead`: 404 LEAD_NOT_FOUND) and its state, read by
    the same statement."""
    row = conn.execute(_state_query(organization_id, lead_id).with_for_update(of=leads)).mappings().first()
    if row is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    return _state_from(row)


def lock_lead_for_task(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> LeadFollowUpState | None:
    """Task-side writes: the task's lead FOR NO KEY UPDATE (see the module docstring); None when it is not
    a lead of the organization."""
    # key_share without read: FOR NO KEY UPDATE.
    locked = _state_query(organization_id, lead_id).with_for_update(key_share=True, of=leads)
    row = conn.execute(locked).mappings().first()
    return None if row is None else _state_from(row)


def lock_open_contact_task(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any] | None:
    """The lead's one open contact task, FOR UPDATE; call it holding the lead's lock."""
    row = (
        conn.execute(
            select(tasks)
            .where(
                tasks.c.organization_id == organization_id,
                tasks.c.linked_lead_id == lead_id,
                tasks.c.type == CONTACT_LEAD_TASK,
                tasks.c.status.in_(OPEN_TASK_STATUSES),
                tasks.c.deleted_at.is_(None),
            )
            .with_for_update()
        )
        .mappings()
        .first()
    )
    return None if row is None else dict(row)


def task_not_found() -> NotFound:
    return NotFound("Task not found.", code="TASK_NOT_FOUND")


def lock_task(
    conn: Connection, organization_id: uuid.UUID, task_id: uuid.UUID
) -> tuple[dict[str, Any], LeadFollowUpState | None]:
    """A task for a write, with its lead's state when it is linked: the lead first, then the task.

    The task is read once unlocked to learn its lead, the lead is locked, then the task is locked and read
    again (the link cannot change: no API moves a task to another lead). 404 TASK_NOT_FOUND for a task that
    is not the organization's or was deleted."""
    task_filter = and_(tasks.c.organization_id == organization_id, tasks.c.id == task_id, tasks.c.deleted_at.is_(None))
    linked_lead_id = conn.execute(select(tasks.c.linked_lead_id).where(task_filter)).first()
    if linked_lead_id is None:
        raise task_not_found()
    state = None
    if linked_lead_id[0] is not None:
        state = lock_lead_for_task(conn, organization_id, linked_lead_id[0])
    row = conn.execute(select(tasks).where(task_filter).with_for_update()).mappings().first()
    if row is None:  # erased meanwhile
        raise task_not_found()
    return dict(row), state
