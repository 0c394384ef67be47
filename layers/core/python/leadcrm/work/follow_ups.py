"""The follow-up IS the lead's task (spec "One object"): the only writer of the lead ⇄ task pair.

A lead's follow-up lives on the lead (next_action_at / _type / _note); its one open contact_lead task
(`tasks_open_contact_lead_unique_idx`) mirrors it. Every function here keeps the two in step and never
calls back into the leads or tasks services, so a write in one direction cannot bounce back.

Lock order, the same for every write of the pair: the lead row first, then the task row.
- Lead-side writes (set / clear the follow-up, touches) take the lead with `leads.moves.lock_lead`
  (FOR UPDATE), then the lead's open contact task FOR UPDATE.
- Task-side writes (complete / cancel / reschedule / create a linked task) find the task's lead, take the
  lead FOR NO KEY UPDATE (it conflicts with FOR UPDATE and with itself, so writers queue; it lets foreign
  key checks of other rows through), then the task FOR UPDATE, and re-read it under both locks.
So two staff members acting on one lead queue instead of deadlocking. The reads under those locks are
`work.follow_up_state`.

Rules (pure, in `leadcrm.work.rules.follow_ups`): the task is due on the follow-up's org-local date, at its
local time unless that is midnight; setting a follow-up moves the lead's open contact task (or creates
one); clearing it cancels the task that stands for it; closing or rescheduling a task that stands for the
follow-up clears or moves the follow-up, and a linked task that does not stand for it never touches it.
Timeline: follow_up_set / follow_up_cleared (best-effort, `record_activity`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, insert, literal, select, update

from leadcrm.directory.rules import Actor, system_actor
from leadcrm.leads.activity import activities_insert
from leadcrm.leads.rules.intake import MAX_TASK_TITLE_LENGTH
from leadcrm.leads.tables import LEAD_COLUMNS, leads
from leadcrm.pipelines.rules.statuses import StageCategory, is_open
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import NotFound
from leadcrm.platform.ids import parse_uuid, uuid7
from leadcrm.work.follow_up_state import (
    CONTACT_LEAD_TASK,
    OPEN_TASK_STATUSES,
    LeadFollowUpState,
    lock_lead_for_task,
    lock_lead_state,
    lock_open_contact_task,
)
from leadcrm.work.rules.follow_ups import (
    SEED_TYPE,
    FollowUp,
    TaskDue,
    TouchFollowUpPlan,
    follow_up_at_for_due,
    is_auto_seed,
    task_due_for,
)
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

FOLLOW_UP_SET = "follow_up_set"
FOLLOW_UP_CLEARED = "follow_up_cleared"


# -- writing the pair ------------------------------------------------------------------------------------


def _follow_up_payload(follow_up: FollowUp, via: str, task_id: uuid.UUID | None) -> dict[str, Any]:
    return {
        "at": follow_up.at.isoformat(),
        "type": follow_up.type,
        "note": follow_up.note,
        "via": via,
        "taskId": str(task_id) if task_id else None,
    }


def _follow_up_write(
    actor: Actor, state: LeadFollowUpState, follow_up: FollowUp | None, *, via: str, task_id: uuid.UUID | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The lead's follow-up columns (values of its UPDATE) and the timeline entry that records them."""
    if follow_up is None:
        activity, payload = FOLLOW_UP_CLEARED, {"via": via, "taskId": str(task_id) if task_id else None}
    else:
        activity, payload = FOLLOW_UP_SET, _follow_up_payload(follow_up, via, task_id)
    entry = {
        "organization_id": state.organization_id,
        "lead_id": state.lead_id,
        "type": activity,
        "payload": payload,
        "actor_user_id": actor.user_id,
    }
    values = {
        "next_action_at": follow_up.at if follow_up else None,
        "next_action_type": follow_up.type if follow_up else None,
        "next_action_note": follow_up.note if follow_up else None,
    }
    return values, entry


def _write_lead_follow_up(
    conn: Connection,
    actor: Actor,
    state: LeadFollowUpState,
    follow_up: FollowUp | None,
    *,
    via: str,
    task_id: uuid.UUID | None,
    carried: Sequence[Any] = (),
    returning: Sequence[Any] = (),
) -> dict[str, Any]:
    """The lead's follow-up and its timeline entry in one statement (the entry a CTE of the UPDATE, built so
    it cannot fail: leads.activity), with the `carried` CTEs (the task's write); the lead after
    (LEAD_COLUMNS and `returning`)."""
    values, entry = _follow_up_write(actor, state, follow_up, via=via, task_id=task_id)
    statement = (
        update(leads)
        .where(leads.c.organization_id == state.organization_id, leads.c.id == state.lead_id)
        .values(**values, updated_at=sql_now())
        .returning(*LEAD_COLUMNS, *returning)
        .add_cte(activities_insert([entry], "follow_up_entry").cte("follow_up_timeline"), *carried)
    )
    return dict(conn.execute(statement).mappings().one())


def _close_task(conn: Connection, task_id: uuid.UUID, status: str) -> None:
    conn.execute(_task_closing(task_id, status))


def _task_closing(task_id: uuid.UUID, status: str) -> Any:
    """`_close_task`'s statement (for a caller that carries it as a CTE)."""
    stamp = "completed_at" if status == "completed" else "cancelled_at"
    return update(tasks).where(tasks.c.id == task_id).values(status=status, updated_at=sql_now(), **{stamp: sql_now()})


def _follow_up_title(follow_up: FollowUp, label: str) -> str:
    return f"Follow up ({follow_up.type}): {label}"[:MAX_TASK_TITLE_LENGTH].rstrip()


@dataclass(frozen=True)
class TaskFields:
    """What a caller may say about the task that mirrors a follow-up (None: the defaults)."""

    title: str | None = None
    description: str | None = None
    priority: str | None = None
    assignee_user_id: uuid.UUID | None = None
    source: str = "manual"


def _place_task(
    conn: Connection,
    actor: Actor,
    state: LeadFollowUpState,
    follow_up: FollowUp,
    task: dict[str, Any] | None,
    fields: TaskFields,
) -> uuid.UUID:
    """Moves the lead's open contact task onto the follow-up, or creates it; the task's id."""
    statement, task_id = _task_placement(actor, state, follow_up, task, fields)
    conn.execute(statement)
    return task_id


def _task_placement(
    actor: Actor,
    state: LeadFollowUpState,
    follow_up: FollowUp,
    task: dict[str, Any] | None,
    fields: TaskFields,
) -> tuple[Any, uuid.UUID]:
    """`_place_task`'s statement (for a caller that carries it as a CTE) and the task's id."""
    due = task_due_for(follow_up.at, state.zone)
    if task is not None:
        values: dict[str, Any] = {"due_date": due.due_date, "due_time": due.due_time, "updated_at": sql_now()}
        for name in ("title", "description", "priority", "assignee_user_id"):
            if getattr(fields, name) is not None:
                values[name] = getattr(fields, name)
        return update(tasks).where(tasks.c.id == task["id"]).values(**values), task["id"]
    task_id = uuid7()
    return (
        insert(tasks).values(
            id=task_id,
            organization_id=state.organization_id,
            type=CONTACT_LEAD_TASK,
            title=fields.title or _follow_up_title(follow_up, state.label),
            description=fields.description,
            priority=fields.priority or "medium",
            source=fields.source,
            due_date=due.due_date,
            due_time=due.due_time,
            assignee_user_id=fields.assignee_user_id or state.owner_user_id or actor.user_id,
            linked_lead_id=state.lead_id,
            created_by_user_id=actor.user_id,
        ),
        task_id,
    )


# -- lead side -----------------------------------------------------------------------------------------------


def set_follow_up(
    conn: Connection,
    actor: Actor,
    lead_id: uuid.UUID,
    follow_up: FollowUp,
    *,
    via: str = "follow_up",
    fields: TaskFields | None = None,
    state: LeadFollowUpState | None = None,
    returning: Sequence[Any] = (),
) -> dict[str, Any]:
    """Sets the lead's follow-up and moves its open contact task onto it (or creates one); the lead after
    (LEAD_COLUMNS and `returning`). The task's write, the lead's and the timeline entry are one statement.

    `state`: the caller already holds the lead's lock (a touch). Assignee of a new task: the lead's owner,
    else the actor."""
    state = state or lock_lead_state(conn, actor.organization_id, lead_id)
    task = lock_open_contact_task(conn, state.organization_id, state.lead_id)
    placement, task_id = _task_placement(actor, state, follow_up, task, fields or TaskFields())
    return _write_lead_follow_up(
        conn,
        actor,
        state,
        follow_up,
        via=via,
        task_id=task_id,
        carried=[placement.cte("placed_task")],
        returning=returning,
    )


def clear_follow_up(conn: Connection, actor: Actor, lead_id: uuid.UUID) -> bool:
    """Clears the lead's follow-up and cancels the task that stands for it; False when there was none."""
    state = lock_lead_state(conn, actor.organization_id, lead_id)
    if state.follow_up is None:
        return False
    task = lock_open_contact_task(conn, state.organization_id, state.lead_id)
    task_id = None
    if task is not None and state.mirrors(task):
        _close_task(conn, task["id"], "cancelled")
        task_id = task["id"]
    _write_lead_follow_up(conn, actor, state, None, via="follow_up", task_id=task_id)
    return True


def apply_touch(
    conn: Connection, actor: Actor, state: LeadFollowUpState, plan: TouchFollowUpPlan, new: FollowUp | None
) -> None:
    """A touch's effect on the pair, under the lead's lock (`state`): see
    `work.rules.follow_ups.plan_touch_follow_up`."""
    if not plan.changes_anything:
        return
    task = lock_open_contact_task(conn, state.organization_id, state.lead_id)
    completed_id = None
    if plan.complete_task and task is not None and state.mirrors(task):
        _close_task(conn, task["id"], "completed")
        completed_id, task = task["id"], None
    if plan.replace:
        assert new is not None
        task_id = _place_task(conn, actor, state, new, task, TaskFields())
        _write_lead_follow_up(conn, actor, state, new, via="touch", task_id=task_id)
    elif plan.clear and state.follow_up is not None:
        _write_lead_follow_up(conn, actor, state, None, via="touch", task_id=completed_id)


@dataclass(frozen=True)
class PairWrites:
    """A lead-side write of the pair as pieces of the lead's own UPDATE (`leads.moves.AlsoWritten`): the
    follow-up columns, the timeline entry that records them, and the task's write as CTEs."""

    values: dict[str, Any] = field(default_factory=dict)
    activities: list[dict[str, Any]] = field(default_factory=list)
    carried: list[Any] = field(default_factory=list)


def touch_pair_writes(
    conn: Connection, actor: Actor, state: LeadFollowUpState, plan: TouchFollowUpPlan, new: FollowUp | None
) -> PairWrites:
    """`apply_touch` for a caller that writes the lead once more in this unit (a touch's contact stamps): the
    same writes, but the lead's and the task's ride in that caller's UPDATE. The task is locked here (the
    lead's lock is held: lead, then task).

    One exception runs at once: a replace that completes the task standing for the old follow-up closes it
    in its own statement, before the new task's INSERT rides along; in one statement PostgreSQL does not
    fix the order of the two writes, and the open-task unique index needs the close first."""
    if not plan.changes_anything:
        return PairWrites()
    task = lock_open_contact_task(conn, state.organization_id, state.lead_id)
    completed_id = None
    carried: list[Any] = []
    if plan.complete_task and task is not None and state.mirrors(task):
        if plan.replace:
            _close_task(conn, task["id"], "completed")
        else:
            carried.append(_task_closing(task["id"], "completed").cte("closed_task"))
        completed_id, task = task["id"], None
    if plan.replace:
        assert new is not None
        placement, task_id = _task_placement(actor, state, new, task, TaskFields())
        carried.append(placement.cte("placed_task"))
        values, entry = _follow_up_write(actor, state, new, via="touch", task_id=task_id)
    elif plan.clear and state.follow_up is not None:
        values, entry = _follow_up_write(actor, state, None, via="touch", task_id=completed_id)
    else:
        return PairWrites(carried=carried)
    return PairWrites(values=values, activities=[entry], carried=carried)


# -- task side -----------------------------------------------------------------------------------------------


def is_follow_up_task(task: dict[str, Any], state: LeadFollowUpState | None) -> bool:
    """An open linked contact task that stands for its lead's follow-up."""
    return (
        state is not None
        and task["type"] == CONTACT_LEAD_TASK
        and task["status"] in OPEN_TASK_STATUSES
        and state.mirrors(task)
    )


def close_task(
    conn: Connection, actor: Actor, task: dict[str, Any], state: LeadFollowUpState | None, status: str
) -> None:
    """Completes or cancels an open task (locked with `lock_task`); one that stands for the follow-up
    clears it."""
    mirrored = is_follow_up_task(task, state)
    _close_task(conn, task["id"], status)
    if mirrored and state is not None and state.follow_up is not None:
        _write_lead_follow_up(conn, actor, state, None, via=f"task_{status}", task_id=task["id"])


def reschedule_task(
    conn: Connection, actor: Actor, task: dict[str, Any], state: LeadFollowUpState | None, due: TaskDue
) -> bool:
    """Moves the follow-up along with a task that stands for it (the caller writes the task's own row);
    True when the follow-up moved. An intake/return call that is rescheduled becomes a plain follow-up."""
    if not is_follow_up_task(task, state) or due.due_date is None:
        return False
    assert state is not None
    at = follow_up_at_for_due(due, state.zone, state.follow_up)
    previous = state.follow_up
    moved = FollowUp(
        at=at,
        type=previous.type if previous else SEED_TYPE,
        note=previous.note if previous else None,
    )
    if previous is not None and moved == previous:
        return False
    if is_auto_seed(moved, state.clock):  # moved exactly onto a seed instant: still the same seed
        return False
    _write_lead_follow_up(conn, actor, state, moved, via="task_rescheduled", task_id=task["id"])
    return True


def create_linked_contact_task(
    conn: Connection, actor: Actor, lead_id: uuid.UUID, due: TaskDue, fields: TaskFields
) -> tuple[uuid.UUID, bool]:
    """tasks.create of a contact_lead task for a lead merges into the lead's follow-up: the follow-up is set
    to the task's due date (and time) as a call, and the lead's open contact task is moved onto it (or
    created). (task id, merged: True when an existing open contact task was reused)."""
    state = lock_lead_for_task(conn, actor.organization_id, lead_id)
    if state is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    if due.due_date is None:  # no date: the contact is due today, org-local
        due = TaskDue(clock.now().astimezone(state.zone).date(), due.due_time)
    at = follow_up_at_for_due(due, state.zone, None)
    follow_up = FollowUp(at=at, type=SEED_TYPE, note=(fields.title or "")[:255] or None)
    task = lock_open_contact_task(conn, state.organization_id, lead_id)
    task_id = _place_task(conn, actor, state, follow_up, task, fields)
    _write_lead_follow_up(conn, actor, state, follow_up, via="task_created", task_id=task_id)
    return task_id, task is not None


# -- the automatic seeds -------------------------------------------------------------------------------------


def intake_seed_values_sql(intake_task: Any) -> dict[str, Any]:
    """The new lead's seed follow-up as values of its INSERT: a call due at the lead's created_at (the clock's
    instant, as created_at is), which the intake task (due tomorrow) stands for. Written exactly when the task
    is: read from `intake_task` (the auto-task INSERT's CTE, RETURNING the row it wrote), so NULLs without."""
    return {
        "next_action_at": select(sql_now()).select_from(intake_task).scalar_subquery(),
        "next_action_type": select(literal(SEED_TYPE)).select_from(intake_task).scalar_subquery(),
    }


def intake_seeds_values_sql(intake_tasks: Any, lead_id: Any) -> dict[str, Any]:
    """`intake_seed_values_sql` for the leads of one multi-row INSERT: each lead's seed is read from its own
    task in `intake_tasks` (RETURNING linked_lead_id), correlated on the row's `lead_id`."""
    written = intake_tasks.c.linked_lead_id == lead_id
    return {
        "next_action_at": select(sql_now()).select_from(intake_tasks).where(written).scalar_subquery(),
        "next_action_type": select(literal(SEED_TYPE)).select_from(intake_tasks).where(written).scalar_subquery(),
    }


def sync_return_call(conn: Connection, detail: dict[str, Any]) -> bool:
    """`lead.returned` consumer (spec: "The follow-up task is synced after commit"): the return call gets its
    task, due today org-local, for the lead's owner; idempotent (a redelivery finds the task in place). A lead
    whose follow-up moved on since, or that is no longer open, is left alone. True when it wrote."""
    organization_id = parse_uuid(str(detail.get("organizationId", "")))
    lead_id = parse_uuid(str((detail.get("payload") or {}).get("leadId") or detail.get("aggregateId") or ""))
    if organization_id is None or lead_id is None:
        return False
    state = lock_lead_for_task(conn, organization_id, lead_id)
    if state is None:  # erased before the event arrived
        return False
    follow_up = state.follow_up
    if follow_up is None or follow_up.at != state.clock.returned_at or not state.is_auto_seed:
        return False
    if not is_open(StageCategory(state.status)):
        return False
    task = lock_open_contact_task(conn, organization_id, lead_id)
    due = task_due_for(follow_up.at, state.zone)
    if task is not None and (task["due_date"], task["due_time"]) == (due.due_date, due.due_time):
        return False
    actor = system_actor(organization_id)
    fields = TaskFields(
        title=f"Call returning lead: {state.label}"[:MAX_TASK_TITLE_LENGTH].rstrip(), priority="high", source="auto"
    )
    _place_task(conn, actor, state, follow_up, task, fields if task is None else TaskFields())
    return True
