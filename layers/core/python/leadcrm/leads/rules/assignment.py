"""Assignment rules: who a lead that arrives without an owner goes to (pure; leads.assignment runs them).

An organization's rules are tried in order and the first that matches the lead AND can place it wins. A rule
matches when every condition it sets holds (an empty condition matches anything): the lead's source, its
campaign hook, its pipeline, the form or WhatsApp number it came through, its language (the locale's first
subtag) and the time of day in the organization's timezone (a window that may wrap midnight).

A rule places the lead with one of three strategies, always among the staff it names:
- round-robin: in the rule's order from its cursor, the first eligible person; the cursor moves past them;
- least-loaded: the eligible person with the fewest open leads (ties: the rule's order);
- fixed: its one person.
Eligible: still active staff of the organization, available (not away, inside their working hours when they
set any) and under the rule's capacity of open leads (when it sets one). A named person who left is skipped
and reported (`Choice.departed`); a rule that can place nobody is skipped, so the next rule is tried, and a
lead no rule can place stays unassigned (the work queue's `unassigned` reason).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from zoneinfo import ZoneInfo

MINUTES_PER_DAY = 24 * 60
RULE_ASSIGNED_ACTIVITY = "assigned_by_rule"


class Strategy(StrEnum):
    ROUND_ROBIN = "round_robin"
    LEAST_LOADED = "least_loaded"
    FIXED = "fixed"


@dataclass(frozen=True)
class TimeWindow:
    """Minutes of the day [start, end): start > end wraps midnight (22:00-06:00); start == end is all day."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not (0 <= self.start < MINUTES_PER_DAY and 0 <= self.end < MINUTES_PER_DAY):
            raise ValueError("a time window's minutes are within one day")

    def contains(self, minute: int) -> bool:
        if self.start == self.end:
            return True
        if self.start < self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end


def parse_clock(text: str) -> int:
    """'HH:MM' (00:00-23:59) -> minute of the day; ValueError otherwise."""
    hours, _, minutes = text.partition(":")
    if len(hours) != 2 or len(minutes) != 2 or not (hours.isdigit() and minutes.isdigit()):
        raise ValueError(f"not a HH:MM time: {text!r}")
    h, m = int(hours), int(minutes)
    if h > 23 or m > 59:
        raise ValueError(f"not a HH:MM time: {text!r}")
    return h * 60 + m


def format_clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def local_moment(at: datetime, timezone: str | None) -> tuple[int, int]:
    """(ISO weekday 1-7, minute of the day) of an aware instant in the timezone (UTC when unknown)."""
    local = at.astimezone(ZoneInfo(timezone or "UTC"))
    return local.isoweekday(), local.hour * 60 + local.minute


def language_of(locale: str | None) -> str | None:
    """'he-IL' / 'he_IL' / 'HE' -> 'he'; None for no locale."""
    if not locale or not locale.strip():
        return None
    return locale.strip().replace("_", "-").split("-")[0].lower()


# -- availability --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkingHours:
    """One window of a weekday (ISO 1 = Monday) in the organization's timezone."""

    day: int
    window: TimeWindow


@dataclass(frozen=True)
class Availability:
    away_until: datetime | None = None
    working_hours: tuple[WorkingHours, ...] = ()  # none: any time

    def is_available(self, at: datetime, timezone: str | None) -> bool:
        """Not away at `at`, and inside one of their working hours when they set any. A window that wraps
        midnight belongs to the day it starts on (Friday 22:00-02:00 covers Saturday 01:00)."""
        if self.away_until is not None and at < self.away_until:
            return False
        if not self.working_hours:
            return True
        day, minute = local_moment(at, timezone)
        previous = 7 if day == 1 else day - 1
        for hours in self.working_hours:
            window = hours.window
            wraps = window.start > window.end
            if hours.day == day and window.contains(minute) and (not wraps or minute >= window.start):
                return True
            if wraps and hours.day == previous and minute < window.end:
                return True
        return False


# -- rules ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadTraits:
    """What a rule can match on, for one arriving lead."""

    source: str | None = None
    campaign_id: uuid.UUID | None = None
    pipeline_id: uuid.UUID | None = None
    form_ref: str | None = None  # the Meta form id or the WhatsApp number id it came through
    language: str | None = None
    minute_of_day: int = 0  # in the organization's timezone


@dataclass(frozen=True)
class AssignmentRule:
    id: uuid.UUID
    name: str
    strategy: Strategy
    user_ids: tuple[uuid.UUID, ...]
    sources: frozenset[str] = frozenset()
    campaign_ids: frozenset[uuid.UUID] = frozenset()
    pipeline_ids: frozenset[uuid.UUID] = frozenset()
    form_refs: frozenset[str] = frozenset()
    languages: frozenset[str] = frozenset()
    window: TimeWindow | None = None
    capacity: int | None = None  # open leads a person may hold before the rule passes them by
    cursor: int = 0  # round-robin: the position in user_ids to try first

    def matches(self, lead: LeadTraits) -> bool:
        return (
            _allows(self.sources, lead.source)
            and _allows(self.campaign_ids, lead.campaign_id)
            and _allows(self.pipeline_ids, lead.pipeline_id)
            and _allows(self.form_refs, lead.form_ref)
            and _allows(self.languages, lead.language)
            and (self.window is None or self.window.contains(lead.minute_of_day))
        )


def _allows(allowed: frozenset[object], value: object) -> bool:
    return not allowed or value in allowed


@dataclass(frozen=True)
class StaffState:
    """A person a rule names, as the intake sees them now."""

    active: bool  # still an active staff member (owner, admin, coach) of the organization
    available: bool
    open_leads: int


@dataclass(frozen=True)
class Choice:
    rule: AssignmentRule
    user_id: uuid.UUID
    next_cursor: int  # the rule's cursor after this choice (unchanged except for round-robin)


@dataclass(frozen=True)
class Assignment:
    """The outcome for one lead: the choice (None: no rule could place it) and every named person who left,
    by rule id, among the rules tried (reported, never chosen)."""

    choice: Choice | None
    departed: Mapping[uuid.UUID, tuple[uuid.UUID, ...]] = field(default_factory=dict)


def _eligible(rule: AssignmentRule, state: StaffState | None) -> bool:
    if state is None or not state.active or not state.available:
        return False
    return rule.capacity is None or state.open_leads < rule.capacity


def choose(rule: AssignmentRule, staff: Mapping[uuid.UUID, StaffState]) -> Choice | None:
    """The person the rule places a lead with, or None when it can place nobody."""
    people = rule.user_ids
    if not people:
        return None
    if rule.strategy is Strategy.FIXED:
        person = people[0]
        return Choice(rule, person, rule.cursor) if _eligible(rule, staff.get(person)) else None
    if rule.strategy is Strategy.LEAST_LOADED:
        eligible = [(staff[p].open_leads, n, p) for n, p in enumerate(people) if _eligible(rule, staff.get(p))]
        return Choice(rule, min(eligible)[2], rule.cursor) if eligible else None
    start = rule.cursor % len(people)
    for step in range(len(people)):
        index = (start + step) % len(people)
        if _eligible(rule, staff.get(people[index])):
            return Choice(rule, people[index], (index + 1) % len(people))
    return None


def departed_of(rule: AssignmentRule, staff: Mapping[uuid.UUID, StaffState]) -> tuple[uuid.UUID, ...]:
    """The people the rule names who are no longer active staff of the organization."""
    return tuple(p for p in rule.user_ids if (state := staff.get(p)) is None or not state.active)


def assign(rules: Sequence[AssignmentRule], lead: LeadTraits, staff: Mapping[uuid.UUID, StaffState]) -> Assignment:
    """First matching rule that can place the lead wins (see the module docstring)."""
    departed: dict[uuid.UUID, tuple[uuid.UUID, ...]] = {}
    for rule in rules:
        if not rule.matches(lead):
            continue
        if gone := departed_of(rule, staff):
            departed[rule.id] = gone
        choice = choose(rule, staff)
        if choice is not None:
            return Assignment(choice, departed)
    return Assignment(None, departed)


def assign_many(
    rules: Sequence[AssignmentRule], leads: Iterable[LeadTraits], staff: Mapping[uuid.UUID, StaffState]
) -> tuple[list[Assignment], dict[uuid.UUID, int]]:
    """`assign` for a batch in one pass, in order, as if each lead had been committed before the next: each
    choice adds one open lead to its person and moves its rule's cursor. Returns the assignments and the
    final cursor of every round-robin rule that placed a lead."""
    current = {rule.id: rule for rule in rules}
    loads = dict(staff)
    cursors: dict[uuid.UUID, int] = {}
    results = []
    for lead in leads:
        assignment = assign([current[rule.id] for rule in rules], lead, loads)
        results.append(assignment)
        choice = assignment.choice
        if choice is None:
            continue
        state = loads[choice.user_id]
        loads[choice.user_id] = replace(state, open_leads=state.open_leads + 1)
        if choice.rule.strategy is Strategy.ROUND_ROBIN:
            current[choice.rule.id] = replace(current[choice.rule.id], cursor=choice.next_cursor)
            cursors[choice.rule.id] = choice.next_cursor
    return results, cursors
