"""A lead's follow-up and the task that stands for it (spec "Follow-ups and lead tasks", "One object").

The follow-up is the lead's next scheduled contact: when (an instant), how (call, whatsapp, email, meeting,
custom) and a note of at most 255 characters. The lead's one open contact_lead task mirrors it:

- the task is due on the follow-up's date in the organization's timezone, at its local time of day; a
  follow-up at local midnight is a whole-day follow-up and its task has no time;
- a task stands for the follow-up (`task_mirrors_follow_up`) when the lead has no follow-up, when the
  follow-up is still an automatic seed (the new-lead intake call or the return call, `is_auto_seed`), or
  when the follow-up falls on the task's org-local due date (and due time, if the task has one).

The automatic seeds are recognised from the lead row itself, so no extra state can drift: a `call` due
exactly at the lead's created_at (the intake call, written with the lead) or at its returned_at (the return
call, written by the reopen); anything a person sets is due at another instant (the work queue's
`work.rules.attention.is_seed_call` reads it the same way). Both seeds are "a call due now": neither counts
as overdue (the queue's rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, tzinfo
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_FOLLOW_UP_NOTE = 255
SEED_TYPE = "call"


class FollowUpType(StrEnum):
    CALL = "call"
    WHATSAPP = "whatsapp"
    EMAIL = "email"
    MEETING = "meeting"
    CUSTOM = "custom"


@dataclass(frozen=True)
class FollowUp:
    at: datetime
    type: str
    note: str | None = None


@dataclass(frozen=True)
class LeadClock:
    """The lead's own instants the automatic seeds are due at."""

    created_at: datetime
    returned_at: datetime | None = None


@dataclass(frozen=True)
class TaskDue:
    due_date: date | None
    due_time: time | None = None


def organization_zone(name: str | None) -> tzinfo:
    """The organization's timezone; an unknown name reads as UTC rather than failing the write."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def follow_up_of(at: datetime | None, follow_up_type: str | None, note: str | None) -> FollowUp | None:
    """The lead columns as a follow-up; none without an instant."""
    if at is None:
        return None
    return FollowUp(at=at, type=follow_up_type or FollowUpType.CUSTOM.value, note=note)


def intake_seed_values(lead: Mapping[str, Any]) -> dict[str, Any]:
    """The follow-up columns of a new lead whose intake task (and with it the seed) was written."""
    return {"next_action_at": lead["created_at"], "next_action_type": SEED_TYPE, "next_action_note": None}


def is_auto_seed(follow_up: FollowUp | None, clock: LeadClock) -> bool:
    """Still the intake call or the return call (see the module docstring)."""
    if follow_up is None or follow_up.type != SEED_TYPE:
        return False
    return follow_up.at == clock.created_at or (clock.returned_at is not None and follow_up.at == clock.returned_at)


def task_due_for(at: datetime, zone: tzinfo) -> TaskDue:
    """The due date and time of the task that mirrors a follow-up at `at`."""
    local = at.astimezone(zone)
    local_time = local.time().replace(tzinfo=None)
    return TaskDue(due_date=local.date(), due_time=None if local_time == time(0) else local_time)


def follow_up_at_for_due(due: TaskDue, zone: tzinfo, previous: FollowUp | None) -> datetime:
    """Where a rescheduled task moves its follow-up: the task's date at its time, or, for a task with no
    time, at the follow-up's own local time of day (midnight when there was none)."""
    assert due.due_date is not None
    if due.due_time is not None:
        local_time = due.due_time
    elif previous is not None:
        local_time = previous.at.astimezone(zone).time().replace(tzinfo=None)
    else:
        local_time = time(0)
    return datetime.combine(due.due_date, local_time, tzinfo=zone)


def task_mirrors_follow_up(follow_up: FollowUp | None, clock: LeadClock, due: TaskDue, zone: tzinfo) -> bool:
    """Whether the lead's linked contact task stands for its follow-up (spec taskMirrorsFollowUp)."""
    if follow_up is None or is_auto_seed(follow_up, clock):
        return True
    if due.due_date is None:
        return False
    local = follow_up.at.astimezone(zone)
    if local.date() != due.due_date:
        return False
    return due.due_time is None or local.time().replace(tzinfo=None) == due.due_time


class TouchFollowUpAction(StrEnum):
    REPLACE = "replace"
    CLEAR = "clear"
    KEEP = "keep"


@dataclass(frozen=True)
class TouchFollowUpPlan:
    """What a touch does to the follow-up: `complete_task` completes the task that stands for the current
    follow-up (the touch was that contact), then the follow-up is replaced, cleared, or left."""

    complete_task: bool
    clear: bool
    replace: bool

    @property
    def changes_anything(self) -> bool:
        return self.complete_task or self.clear or self.replace


def plan_touch_follow_up(
    action: TouchFollowUpAction, *, human_contact: bool, current_is_seed: bool
) -> TouchFollowUpPlan:
    """replace / clear: the touch did the follow-up's contact, so its task completes and the follow-up is
    replaced or cleared. keep: nothing changes, except that the first real contact retires the intake call
    or the return call (cleared, its task completed: spec "first contact retires it")."""
    if action is TouchFollowUpAction.REPLACE:
        return TouchFollowUpPlan(complete_task=True, clear=False, replace=True)
    if action is TouchFollowUpAction.CLEAR:
        return TouchFollowUpPlan(complete_task=True, clear=True, replace=False)
    retire = human_contact and current_is_seed
    return TouchFollowUpPlan(complete_task=retire, clear=retire, replace=False)
