"""Why a lead needs someone now, how urgent it is, and the morning urgent prompt: pure rules, no I/O.

The work queue (`work.queue`) and the urgent counts (`work.urgent_prompt`) select their rows
in SQL with the same rules; `lead_reasons` here is the reference those statements are tested against, and
it labels every queue row with its reasons.

Reasons (spec "Sales queue", "Follow-ups and lead tasks", lead-intake-principles "actionable queues"):

- `inbound_unanswered`: the lead wrote last (leads.last_inbound_at after leads.last_outbound_at). Nothing
  writes these two columns yet: the conversations issue stamps them; the reason is ready for it.
- `follow_up_overdue` / `follow_up_due_today`: the follow-up (leads.next_action_at) falls before today /
  today, in the organization's timezone. The seeded call of a new lead (next_action_type 'call' at the
  lead's created_at) and the return call (at its returned_at) are never overdue nor due: they are the
  `new_untouched` and `returned` reasons' business.
- `new_untouched`: a `new` lead nobody has tried nor reached, older than the new-lead SLA (15 minutes by
  default, env NEW_LEAD_SLA_MINUTES).
- `returned`: a lead that came back within the last 7 days, still new/contacted, nobody tried since
  returned_at, and its follow-up is none or still the return call.
- `unassigned`: an open lead without an owner. Every entry point runs the organization's assignment rules in
  the lead's own transaction (leads.assignment), so a lead here is one no rule could place (no rule matched,
  or everyone a matching rule names was away, over capacity or gone), one that arrived before the rules, or
  one whose owner was taken off by hand: the owner's worklist of leads to place, never a lead a rule is about
  to place.

Tiers (lower is more urgent; an item's tier is its best reason's):
  0 hot       — arrivals (a new untouched lead, a return, an unanswered inbound) in their first 24 hours
  1 due       — follow-ups overdue or due today
  2 cooling   — the same arrivals from 24 hours to 7 days
  3 backlog   — older untouched new leads and unanswered inbound, and unassigned leads
Within a tier, arrivals rank newest first (by the reason's time); follow-ups rank by when they were due,
the most overdue first. A return older than 7 days is no longer a reason.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import IntEnum, StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from leadcrm.directory.rules import MANAGER_ROLES, Role, is_staff_role

OPEN_STATUSES: tuple[str, ...] = ("new", "contacted", "callback", "trial_booked", "no_show")
# A returned lead keeps the reason while nobody has worked it: it is back at new, or at contacted.
RETURNED_STATUSES: tuple[str, ...] = ("new", "contacted")
SEED_CALL_TYPE = "call"

HOT_WINDOW = timedelta(hours=24)
COOLING_WINDOW = timedelta(days=7)
DEFAULT_NEW_LEAD_SLA = timedelta(minutes=15)
NEW_LEAD_SLA_ENV = "NEW_LEAD_SLA_MINUTES"
# More items than this and the prompt cannot be dismissed, only acted on or snoozed.
URGENT_PROMPT_BLOCKING_THRESHOLD = 5
# The dashboard shows "99+" beyond 99 leads needing attention, so they are counted up to 100 and shown so
# (100 means "100 or more"): counting all 18,800 of a big organization cost most of the prompt's time.
URGENT_LEADS_SHOWN_CAP = 100
SNOOZE_TOMORROW_HOUR = 8


class Reason(StrEnum):
    INBOUND_UNANSWERED = "inbound_unanswered"
    FOLLOW_UP_OVERDUE = "follow_up_overdue"
    FOLLOW_UP_DUE_TODAY = "follow_up_due_today"
    NEW_UNTOUCHED = "new_untouched"
    RETURNED = "returned"
    UNASSIGNED = "unassigned"


# The order reasons are listed in on an item (most pressing first).
REASON_ORDER = tuple(Reason)


class Tier(IntEnum):
    HOT = 0
    DUE = 1
    COOLING = 2
    BACKLOG = 3

    @property
    def newest_first(self) -> bool:
        """Arrivals rank newest first; due follow-ups rank the most overdue first."""
        return self is not Tier.DUE


def new_lead_sla(environ: dict[str, str] | None = None) -> timedelta:
    """The new-lead SLA: NEW_LEAD_SLA_MINUTES (a positive integer), else 15 minutes."""
    raw = (environ if environ is not None else os.environ).get(NEW_LEAD_SLA_ENV, "").strip()
    try:
        minutes = int(raw)
    except ValueError:
        return DEFAULT_NEW_LEAD_SLA
    return timedelta(minutes=minutes) if minutes > 0 else DEFAULT_NEW_LEAD_SLA


# -- the organization's day -------------------------------------------------------------------------------


def org_zone(timezone: str | None) -> tzinfo:
    """The organization's timezone; an unknown or empty name falls back to UTC rather than failing a read."""
    try:
        return ZoneInfo(timezone) if timezone else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


@dataclass(frozen=True)
class OrgDay:
    """Today in the organization's timezone and the instants it starts and ends (23 or 25 hours long on a
    daylight-saving change)."""

    date: date
    starts_at: datetime
    ends_at: datetime


def _local_midnight(day: date, zone: tzinfo) -> datetime:
    # A wall-clock time that does not exist (a spring-forward gap at midnight) resolves forward, as
    # zoneinfo's fold=0 does; converting to UTC makes the instant unambiguous.
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def org_day(now: datetime, timezone: str | None) -> OrgDay:
    zone = org_zone(timezone)
    today = now.astimezone(zone).date()
    return OrgDay(
        date=today,
        starts_at=_local_midnight(today, zone),
        ends_at=_local_midnight(today + timedelta(days=1), zone),
    )


# -- follow-ups ------------------------------------------------------------------------------------------


def is_seed_call(
    next_action_type: str | None,
    next_action_at: datetime | None,
    *,
    created_at: datetime,
    returned_at: datetime | None,
) -> bool:
    """The intake call (a call due at the lead's creation) or the return call (due at its return)."""
    if next_action_type != SEED_CALL_TYPE or next_action_at is None:
        return False
    return next_action_at == created_at or (returned_at is not None and next_action_at == returned_at)


def follow_up_reason(next_action_at: datetime | None, *, seed: bool, day: OrgDay) -> Reason | None:
    if next_action_at is None or seed:
        return None
    if next_action_at < day.starts_at:
        return Reason.FOLLOW_UP_OVERDUE
    if next_action_at < day.ends_at:
        return Reason.FOLLOW_UP_DUE_TODAY
    return None


# -- arrivals --------------------------------------------------------------------------------------------


def arrival_tier(arrived_at: datetime, now: datetime) -> Tier:
    """Hot during the first 24 hours (a future instant, e.g. clock skew, is hot too), cooling to 7 days,
    backlog after."""
    age = now - arrived_at
    if age < HOT_WINDOW:
        return Tier.HOT
    if age < COOLING_WINDOW:
        return Tier.COOLING
    return Tier.BACKLOG


def returned_tier(returned_at: datetime, now: datetime) -> Tier | None:
    """Hot for 24 hours, cooling up to 7 days, then no longer a reason."""
    tier = arrival_tier(returned_at, now)
    return None if tier is Tier.BACKLOG else tier


def _before(moment: datetime | None, since: datetime) -> bool:
    return moment is None or moment < since


@dataclass(frozen=True)
class LeadFacts:
    """What the reasons are computed from: a lead row's columns."""

    status: str
    created_at: datetime
    assigned_to_user_id: uuid.UUID | None = None
    archived_at: datetime | None = None
    paused_at: datetime | None = None
    next_action_at: datetime | None = None
    next_action_type: str | None = None
    returned_at: datetime | None = None
    last_contact_attempt_at: datetime | None = None
    last_contacted_at: datetime | None = None
    last_inbound_at: datetime | None = None
    last_outbound_at: datetime | None = None

    @property
    def in_queue_scope(self) -> bool:
        return self.status in OPEN_STATUSES and self.archived_at is None and self.paused_at is None

    @property
    def never_touched(self) -> bool:
        return self.last_contact_attempt_at is None and self.last_contacted_at is None

    @property
    def seed_call(self) -> bool:
        return is_seed_call(
            self.next_action_type, self.next_action_at, created_at=self.created_at, returned_at=self.returned_at
        )


@dataclass(frozen=True)
class Ranked:
    """One reason with the tier and the instant it ranks by."""

    reason: Reason
    tier: Tier
    at: datetime

    def sort_key(self) -> tuple[int, float]:
        seconds = self.at.timestamp()
        return (self.tier, -seconds if self.tier.newest_first else seconds)


def ranked_reasons(lead: LeadFacts, *, now: datetime, day: OrgDay, sla: timedelta) -> list[Ranked]:
    """Every reason the lead is in the queue for, best first; [] when it needs nothing (or is out of scope:
    closed, won, archived or paused)."""
    if not lead.in_queue_scope:
        return []
    found: list[Ranked] = []
    if lead.last_inbound_at is not None and (
        lead.last_outbound_at is None or lead.last_outbound_at < lead.last_inbound_at
    ):
        found.append(Ranked(Reason.INBOUND_UNANSWERED, arrival_tier(lead.last_inbound_at, now), lead.last_inbound_at))
    follow_up = follow_up_reason(lead.next_action_at, seed=lead.seed_call, day=day)
    if follow_up is not None and lead.next_action_at is not None:
        found.append(Ranked(follow_up, Tier.DUE, lead.next_action_at))
    if lead.status == "new" and lead.never_touched and lead.created_at <= now - sla:
        found.append(Ranked(Reason.NEW_UNTOUCHED, arrival_tier(lead.created_at, now), lead.created_at))
    if (
        lead.returned_at is not None
        and lead.status in RETURNED_STATUSES
        and _before(lead.last_contact_attempt_at, lead.returned_at)
        and _before(lead.last_contacted_at, lead.returned_at)
        and (
            lead.next_action_at is None
            or (lead.next_action_type == SEED_CALL_TYPE and lead.next_action_at == lead.returned_at)
        )
    ):
        tier = returned_tier(lead.returned_at, now)
        if tier is not None:
            found.append(Ranked(Reason.RETURNED, tier, lead.returned_at))
    if lead.assigned_to_user_id is None:
        found.append(Ranked(Reason.UNASSIGNED, Tier.BACKLOG, lead.created_at))
    return sorted(found, key=Ranked.sort_key)


def lead_reasons(lead: LeadFacts, *, now: datetime, day: OrgDay, sla: timedelta) -> list[Reason]:
    """The reasons in their fixed display order."""
    present = {r.reason for r in ranked_reasons(lead, now=now, day=day, sla=sla)}
    return [reason for reason in REASON_ORDER if reason in present]


def is_urgent_for_prompt(lead: LeadFacts, *, now: datetime, day: OrgDay, sla: timedelta, has_open_task: bool) -> bool:
    """The urgent prompt's lead rule: an unanswered inbound, an untouched new lead past the SLA, or a due
    follow-up that no open linked contact task stands for (that one is a task item, never both)."""
    reasons = {r.reason for r in ranked_reasons(lead, now=now, day=day, sla=sla)}
    if Reason.INBOUND_UNANSWERED in reasons or Reason.NEW_UNTOUCHED in reasons:
        return True
    due = reasons & {Reason.FOLLOW_UP_OVERDUE, Reason.FOLLOW_UP_DUE_TODAY}
    return bool(due) and not has_open_task


# -- the urgent prompt -------------------------------------------------------------------------------------


class ReviewTarget(StrEnum):
    LEADS = "leads"
    TASKS = "tasks"


class SnoozeUntil(StrEnum):
    ONE_HOUR = "one_hour"
    TOMORROW = "tomorrow"


@dataclass(frozen=True)
class UrgentCounts:
    """`leads_needing_attention` is counted up to `URGENT_LEADS_SHOWN_CAP`, or to one past `tasks` when
    they are more: exact below that, and still more than `tasks` whenever the real count is, so `is_blocking`
    and `review_target` decide as on the exact count. What people see is `leads_shown`."""

    overdue_tasks: int = 0
    due_today_tasks: int = 0
    leads_needing_attention: int = 0

    @property
    def tasks(self) -> int:
        return self.overdue_tasks + self.due_today_tasks

    @property
    def total(self) -> int:
        return self.tasks + self.leads_needing_attention

    @property
    def leads_shown(self) -> int:
        """The lead count the prompt and the digest show: at most `URGENT_LEADS_SHOWN_CAP` ("99+")."""
        return min(self.leads_needing_attention, URGENT_LEADS_SHOWN_CAP)

    @property
    def leads_capped(self) -> bool:
        """There may be more leads than `leads_shown`."""
        return self.leads_needing_attention >= URGENT_LEADS_SHOWN_CAP


@dataclass(frozen=True)
class PromptState:
    """staff_prompt_states for one user in one organization (both None when there is no row)."""

    last_shown_on: date | None = None
    snoozed_until: datetime | None = None


@dataclass(frozen=True)
class PromptDecision:
    show: bool
    blocking: bool
    review_target: ReviewTarget


def sees_prompt(role: Role | str | None) -> bool:
    """Owner, admin and coach; members never."""
    return is_staff_role(role)


def counts_leads(role: Role | str | None) -> bool:
    """Lead items are for owners and admins only; a coach's prompt is their own tasks."""
    return role in MANAGER_ROLES


def review_target(counts: UrgentCounts) -> ReviewTarget:
    return ReviewTarget.LEADS if counts.leads_needing_attention > counts.tasks else ReviewTarget.TASKS


def is_blocking(counts: UrgentCounts) -> bool:
    return counts.total > URGENT_PROMPT_BLOCKING_THRESHOLD


def decide_prompt(
    role: Role | str | None, counts: UrgentCounts, state: PromptState, *, now: datetime, today: date
) -> PromptDecision:
    """Show once per organization-local day, not while snoozed, never with nothing to show."""
    target = review_target(counts)
    show = (
        sees_prompt(role)
        and counts.total > 0
        and not (state.snoozed_until is not None and state.snoozed_until > now)
        and state.last_shown_on != today
    )
    return PromptDecision(show=show, blocking=show and is_blocking(counts), review_target=target)


def snoozed_until(choice: SnoozeUntil, *, now: datetime, timezone: str | None) -> datetime:
    """An hour from now, or 08:00 tomorrow on the organization's wall clock."""
    if choice is SnoozeUntil.ONE_HOUR:
        return now + timedelta(hours=1)
    zone = org_zone(timezone)
    tomorrow = now.astimezone(zone).date() + timedelta(days=1)
    return datetime.combine(tomorrow, time(SNOOZE_TOMORROW_HOUR), tzinfo=zone).astimezone(UTC)
