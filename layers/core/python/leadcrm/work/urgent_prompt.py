"""The morning urgent prompt (spec "Morning urgent tasks prompt"): what is urgent for one staff member, and
whether to show it now.

Items: the caller's own open tasks due before today / today (organization-local), plus, for owners and
admins, the leads in an urgent attention state (an unanswered inbound, an untouched new lead past the SLA,
a due follow-up that no open linked contact task stands for: that one is a task item, never both). Counted
in SQL, in one statement, up to the 100 the dashboard can show ("99+"; more only for someone with 100
urgent tasks or more, see `UrgentCounts`); `urgent_counts` is also what the daily digest sends.

State (staff_prompt_states): the organization-local day the prompt was last shown, and a snooze. Handled
items need no state: they simply drop out of the live counts.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Connection,
    Select,
    and_,
    exists,
    func,
    literal,
    literal_column,
    select,
    text,
    union_all,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import Actor, Role
from leadcrm.directory.tables import organizations
from leadcrm.leads.tables import INBOUND_UNANSWERED_SQL, QUEUE_SCOPE_SQL, REAL_FOLLOW_UP_SQL, UNTOUCHED_NEW_SQL, leads
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.work.auto_tasks import CONTACT_LEAD_TASK
from leadcrm.work.rules.attention import (
    URGENT_LEADS_SHOWN_CAP,
    OrgDay,
    PromptDecision,
    PromptState,
    ReviewTarget,
    SnoozeUntil,
    UrgentCounts,
    counts_leads,
    decide_prompt,
    new_lead_sla,
    org_day,
    sees_prompt,
    snoozed_until,
)
from leadcrm.work.tables import staff_prompt_states, tasks

# Word for word the predicates of the partial indexes they must match (tables.py).
OPEN_TASK_SQL = "status IN ('pending', 'in_progress') AND deleted_at IS NULL"
OPEN_CONTACT_TASK_SQL = (
    f"tasks.type = '{CONTACT_LEAD_TASK}' AND tasks.status IN ('pending', 'in_progress') AND tasks.deleted_at IS NULL"
)


@dataclass(frozen=True)
class PromptView:
    show: bool
    blocking: bool
    counts: UrgentCounts
    snoozed_until: datetime | None
    review_target: ReviewTarget


def _org_timezone(conn: Connection, organization_id: uuid.UUID) -> str | None:
    return conn.execute(
        select(organizations.c.timezone).where(organizations.c.id == organization_id)
    ).scalar_one_or_none()


def build_task_counts_query(organization_id: uuid.UUID, user_id: uuid.UUID, day: OrgDay) -> Select:
    return select(
        func.count().filter(tasks.c.due_date < day.date).label("overdue"),
        func.count().filter(tasks.c.due_date == day.date).label("due_today"),
    ).where(
        tasks.c.organization_id == organization_id,
        tasks.c.assignee_user_id == user_id,
        text(OPEN_TASK_SQL),
        tasks.c.due_date <= day.date,
    )


def build_lead_count_query(
    organization_id: uuid.UUID, *, now: datetime, day: OrgDay, limit: int | ColumnElement[int] = URGENT_LEADS_SHOWN_CAP
) -> Select:
    """Leads in an urgent attention state, counted up to `limit`: one branch per reason, each on its partial
    index. The branches are made disjoint (a later one leaves out what an earlier one counts), so a plain
    UNION ALL counts each lead once and stops as soon as `limit` leads are found."""
    c = leads.c
    scope = [c.organization_id == organization_id, text(QUEUE_SCOPE_SQL)]
    no_open_contact_task = ~exists().where(
        tasks.c.organization_id == organization_id, tasks.c.linked_lead_id == c.id, text(OPEN_CONTACT_TASK_SQL)
    )
    inbound = literal_column(f"({INBOUND_UNANSWERED_SQL})", Boolean)
    untouched = and_(text(UNTOUCHED_NEW_SQL), c.created_at <= now - new_lead_sla()).self_group()
    due_follow_up = and_(text(REAL_FOLLOW_UP_SQL), c.next_action_at < day.ends_at, no_open_contact_task)
    branches = union_all(
        select(c.id).where(*scope, inbound),
        select(c.id).where(*scope, untouched, inbound.is_not(True)),
        select(c.id).where(*scope, due_follow_up, inbound.is_not(True), untouched.is_not(True)),
    )
    found = select(branches.subquery("urgent_leads").c.id).limit(limit).subquery("found")
    return select(func.count()).select_from(found)


def _counts(
    conn: Connection,
    organization_id: uuid.UUID,
    user_id: uuid.UUID,
    role: Role | str | None,
    *,
    now: datetime,
    day: OrgDay,
) -> UrgentCounts:
    task_counts = build_task_counts_query(organization_id, user_id, day).cte("task_counts")
    lead_count: ColumnElement[int] = literal(0)
    if counts_leads(role):
        # Up to the cap shown, or one past the tasks if they are more: "leads outnumber tasks" stays exact.
        limit = select(
            func.greatest(URGENT_LEADS_SHOWN_CAP, task_counts.c.overdue + task_counts.c.due_today + 1)
        ).scalar_subquery()
        lead_count = build_lead_count_query(organization_id, now=now, day=day, limit=limit).scalar_subquery()
    row = conn.execute(select(task_counts.c.overdue, task_counts.c.due_today, lead_count.label("leads"))).one()
    return UrgentCounts(overdue_tasks=row.overdue, due_today_tasks=row.due_today, leads_needing_attention=row.leads)


def urgent_counts(
    conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID, role: Role | str | None, *, now: datetime
) -> UrgentCounts:
    """A staff member's urgent items (all zero for a member): two statements. The daily digest calls this."""
    if not sees_prompt(role):
        return UrgentCounts()
    day = org_day(now, _org_timezone(conn, organization_id))
    return _counts(conn, organization_id, user_id, role, now=now, day=day)


def _timezone_and_state(conn: Connection, actor: Actor) -> tuple[str | None, PromptState]:
    s = staff_prompt_states.c
    row = conn.execute(
        select(organizations.c.timezone, s.last_shown_on, s.snoozed_until)
        .select_from(
            organizations.outerjoin(
                staff_prompt_states,
                and_(s.organization_id == organizations.c.id, s.user_id == actor.user_id),
            )
        )
        .where(organizations.c.id == actor.organization_id)
    ).one()
    return row.timezone, PromptState(last_shown_on=row.last_shown_on, snoozed_until=row.snoozed_until)


def _view(conn: Connection, actor: Actor, now: datetime) -> tuple[PromptView, OrgDay, str | None]:
    timezone, state = _timezone_and_state(conn, actor)
    day = org_day(now, timezone)
    if not sees_prompt(actor.role) or actor.user_id is None:
        counts = UrgentCounts()
    else:
        counts = _counts(conn, actor.organization_id, actor.user_id, actor.role, now=now, day=day)
    decision: PromptDecision = decide_prompt(actor.role, counts, state, now=now, today=day.date)
    view = PromptView(
        show=decision.show,
        blocking=decision.blocking,
        counts=counts,
        snoozed_until=state.snoozed_until if state.snoozed_until and state.snoozed_until > now else None,
        review_target=decision.review_target,
    )
    return view, day, timezone


def prompt_view(conn: Connection, actor: Actor, *, now: datetime | None = None) -> PromptView:
    """GET …/urgent-prompt: the counts and whether to show the dialog now."""
    return _view(conn, actor, now or clock.now())[0]


def _upsert_state(conn: Connection, actor: Actor, **values: object) -> None:
    statement = pg_insert(staff_prompt_states).values(
        organization_id=actor.organization_id, user_id=actor.user_id, **values
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[staff_prompt_states.c.organization_id, staff_prompt_states.c.user_id],
            set_={**values, "updated_at": sql_now()},
        )
    )


def mark_seen(conn: Connection, actor: Actor, *, now: datetime | None = None) -> PromptView:
    """POST …/urgent-prompt/seen: the prompt was shown today (organization-local). With nothing to show,
    or for a member, nothing is stored."""
    now = now or clock.now()
    view, day, _ = _view(conn, actor, now)
    if not sees_prompt(actor.role) or view.counts.total == 0:
        return view
    _upsert_state(conn, actor, last_shown_on=day.date)
    return PromptView(
        show=False,
        blocking=False,
        counts=view.counts,
        snoozed_until=view.snoozed_until,
        review_target=view.review_target,
    )


def snooze(conn: Connection, actor: Actor, until: SnoozeUntil, *, now: datetime | None = None) -> PromptView:
    """POST …/urgent-prompt/snooze: hidden until then, and shown again once the snooze lapses (the day's
    "seen" is cleared). A member has no prompt: nothing is stored."""
    now = now or clock.now()
    if not sees_prompt(actor.role):
        return _view(conn, actor, now)[0]
    timezone, _ = _timezone_and_state(conn, actor)
    until_at = snoozed_until(until, now=now, timezone=timezone)
    _upsert_state(conn, actor, snoozed_until=until_at, last_shown_on=None)
    return _view(conn, actor, now)[0]
