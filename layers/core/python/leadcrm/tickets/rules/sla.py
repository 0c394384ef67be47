"""SLA arithmetic on an organization's business-hours calendar: pure functions, no I/O.

A calendar is weekly opening hours in the organization's timezone (several intervals a day allowed, e.g. a
lunch break) and a set of holidays (local dates with no business hours at all). Every instant is an aware
datetime; the arithmetic turns each local business interval into a UTC interval through zoneinfo, so a
daylight-saving change is simply a day whose intervals are an hour shorter or longer in real time (a 24-hour
calendar's spring-forward day has 23 hours, 09:00–17:00 is still eight real hours).

- `add_business_time(start, duration, calendar)` → the instant `duration` of business time after `start`
  (the due time of a target). Time outside business hours does not count; an instant exactly at the end
  of an interval is the answer when the duration runs out there (due 17:00 Friday, not 09:00 Monday).
- `business_time_between(start, end, calendar)` → the business time elapsed between two instants.
- `SlaClock`: a resolution timer that runs, pauses (awaiting the customer), resumes and restarts (reopen);
  its `due` is where `add_business_time` lands from the last resume with what is left of the target.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # index = date.weekday()
MINUTES_PER_DAY = 24 * 60
# A calendar with business hours has one within a week, a holiday list covers a few years at most: this bound
# only stops a runaway search on a calendar whose every day is a holiday.
MAX_DAYS_SEARCHED = 3 * 366
_HHMM = re.compile(r"^([01]\d|2[0-4]):([0-5]\d)$")


class CalendarError(ValueError):
    """A calendar that cannot be used (bad timezone, overlapping or empty intervals, no business hours)."""


@dataclass(frozen=True)
class Interval:
    """Business hours within one local day, in minutes after local midnight; end may be 1440 (midnight)."""

    start_minute: int
    end_minute: int


@dataclass(frozen=True)
class BusinessCalendar:
    timezone: str
    # weekday index (0 = Monday) → that day's intervals, ascending and non-overlapping
    weekly: Mapping[int, tuple[Interval, ...]]
    holidays: frozenset[date] = field(default_factory=frozenset)

    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


def parse_hhmm(text: str) -> int:
    """'09:30' → 570 minutes; '24:00' is the end of the day."""
    match = _HHMM.match(text)
    if match is None:
        raise CalendarError(f"{text!r} is not a time of day as HH:MM")
    minutes = int(match.group(1)) * 60 + int(match.group(2))
    if minutes > MINUTES_PER_DAY:
        raise CalendarError(f"{text!r} is after 24:00")
    return minutes


def format_minutes(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def calendar_from_settings(
    timezone: str, weekly_hours: Mapping[str, Sequence[Sequence[str]]], holidays: Sequence[date] = ()
) -> BusinessCalendar:
    """A calendar from its stored shape: {"mon": [["09:00", "17:00"]], ...}; a day not named is closed.

    Raises CalendarError with a message fit for a 400: unknown timezone or weekday, an interval that ends
    before it starts or overlaps another, or a week without any business hours."""
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise CalendarError(f"{timezone!r} is not a known timezone") from error
    weekly: dict[int, tuple[Interval, ...]] = {}
    for day, ranges in weekly_hours.items():
        if day not in WEEKDAYS:
            raise CalendarError(f"{day!r} is not a weekday; use {', '.join(WEEKDAYS)}")
        intervals = []
        for pair in ranges:
            if len(pair) != 2:
                raise CalendarError(f"{day}: each interval is [start, end]")
            start, end = parse_hhmm(pair[0]), parse_hhmm(pair[1])
            if start >= end:
                raise CalendarError(f"{day}: {pair[0]}–{pair[1]} ends before it starts (split a night across two days)")
            intervals.append(Interval(start, end))
        intervals.sort(key=lambda i: i.start_minute)
        for before, after in zip(intervals, intervals[1:], strict=False):
            if after.start_minute < before.end_minute:
                raise CalendarError(f"{day}: intervals overlap")
        if intervals:
            weekly[WEEKDAYS.index(day)] = tuple(intervals)
    if not weekly:
        raise CalendarError("the week has no business hours")
    return BusinessCalendar(timezone=timezone, weekly=weekly, holidays=frozenset(holidays))


def calendar_to_settings(calendar: BusinessCalendar) -> dict[str, list[list[str]]]:
    return {
        WEEKDAYS[day]: [[format_minutes(i.start_minute), format_minutes(i.end_minute)] for i in intervals]
        for day, intervals in sorted(calendar.weekly.items())
    }


ALWAYS_OPEN = {day: [["00:00", "24:00"]] for day in WEEKDAYS}


# -- whether a calendar can carry a target -------------------------------------------------------------------

# The whole days `add_business_time` surely searches after the day it starts on (that day may be over).
SEARCHED_WHOLE_DAYS = MAX_DAYS_SEARCHED - 1
# Springing forward shortens that day's business hours in real time by at most the jump, once a year.
SPRINGS_SEARCHED = math.ceil(SEARCHED_WHOLE_DAYS / 365)


@cache
def dst_allowance(timezone: str) -> timedelta:
    """What daylight saving can take from the business time of one search in this zone: its largest jump
    forward (2000-2040, the rules zoneinfo knows and repeats) for every spring the search spans."""
    zone = ZoneInfo(timezone)
    largest = timedelta(0)
    instant = datetime(2000, 1, 1, tzinfo=UTC)
    offset = instant.astimezone(zone).utcoffset() or timedelta(0)
    while instant.year < 2040:
        instant += timedelta(days=7)
        following = instant.astimezone(zone).utcoffset() or timedelta(0)
        largest, offset = max(largest, following - offset), following
    return largest * SPRINGS_SEARCHED


def scarcest_business_time(calendar: BusinessCalendar) -> tuple[timedelta, date]:
    """The least business time `add_business_time` can find from any start, and a day it starts after (the
    search covers SEARCHED_WHOLE_DAYS whole days after the start's own day; less the zone's dst_allowance).

    Counted in local minutes: the week's hours, less the holidays inside the window. The count changes only
    where a holiday enters or leaves the window, and otherwise repeats weekly, so the week after each such
    day (and one week away from every holiday) holds the minimum."""
    weekly = [sum(i.end_minute - i.start_minute for i in calendar.weekly.get(day, ())) for day in range(7)]
    holidays = sorted(calendar.holidays)
    lost = [0]
    for day in holidays:
        lost.append(lost[-1] + weekly[day.weekday()])
    span = SEARCHED_WHOLE_DAYS
    full_weeks, rest = divmod(span, 7)

    def minutes_from(first: date) -> int:
        open_minutes = full_weeks * sum(weekly) + sum(weekly[(first.weekday() + i) % 7] for i in range(rest))
        inside = lost[bisect.bisect_right(holidays, first + timedelta(days=span - 1))] - lost[
            bisect.bisect_left(holidays, first)
        ]
        return open_minutes - inside

    # Without holidays any week will do; with them, every weekday also starts after some holiday's entry.
    firsts = [date(2000, 1, 3)]
    for day in holidays:
        firsts += [day - timedelta(days=span - 1), day + timedelta(days=1)]
    least, first = min((minutes_from(f + timedelta(days=i)), f + timedelta(days=i)) for f in firsts for i in range(7))
    return max(timedelta(minutes=least) - dst_allowance(calendar.timezone), timedelta(0)), first - timedelta(days=1)


def _local_instant(day: date, minute: int, zone: ZoneInfo) -> datetime:
    """The UTC instant of a local wall-clock minute. Minute 1440 is the next day's midnight. A wall time that
    does not exist (inside a spring-forward gap) is read with the offset before the change (fold=0), which
    maps it to the instant the clocks jumped past: an interval starting in the gap starts at the jump."""
    if minute >= MINUTES_PER_DAY:
        day, minute = day + timedelta(days=1), minute - MINUTES_PER_DAY
    local = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=zone)
    # Round-tripping through UTC normalises a gap time onto real time.
    return local.astimezone(UTC)


def business_intervals(calendar: BusinessCalendar, start: datetime) -> Iterator[tuple[datetime, datetime]]:
    """The calendar's business intervals as UTC instants, in order, from the local day containing `start`
    (intervals that end before `start` included: callers clip). Stops after MAX_DAYS_SEARCHED days."""
    zone = calendar.zone()
    day = start.astimezone(zone).date()
    for _ in range(MAX_DAYS_SEARCHED):
        if day not in calendar.holidays:
            for interval in calendar.weekly.get(day.weekday(), ()):
                begin = _local_instant(day, interval.start_minute, zone)
                end = _local_instant(day, interval.end_minute, zone)
                if end > begin:  # an interval swallowed whole by a DST gap has no real time
                    yield begin, end
        day += timedelta(days=1)


def _require_aware(*instants: datetime) -> None:
    for instant in instants:
        if instant.tzinfo is None or instant.utcoffset() is None:
            raise ValueError("SLA arithmetic needs timezone-aware datetimes")


def add_business_time(start: datetime, duration: timedelta, calendar: BusinessCalendar) -> datetime:
    """The instant when `duration` of business time has passed after `start` (UTC)."""
    _require_aware(start)
    if duration < timedelta(0):
        raise ValueError("duration must not be negative")
    cursor = start.astimezone(UTC)
    remaining = duration
    if remaining == timedelta(0):
        return cursor
    for begin, end in business_intervals(calendar, cursor):
        if end <= cursor:
            continue
        begin = max(begin, cursor)
        available = end - begin
        if remaining <= available:
            return begin + remaining
        remaining -= available
    raise CalendarError("no business hours within the search horizon (every day a holiday?)")


def business_time_between(start: datetime, end: datetime, calendar: BusinessCalendar) -> timedelta:
    """Business time in [start, end); zero when end is not after start."""
    _require_aware(start, end)
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    total = timedelta(0)
    if end <= start:
        return total
    for begin, finish in business_intervals(calendar, start):
        if begin >= end:
            break
        overlap = min(finish, end) - max(begin, start)
        if overlap > timedelta(0):
            total += overlap
    return total


@dataclass(frozen=True)
class SlaClock:
    """A timer of business time: `elapsed` in finished running spans, and since when it runs (None: paused
    or stopped). The instants it answers are UTC."""

    elapsed: timedelta = timedelta(0)
    running_since: datetime | None = None

    @property
    def running(self) -> bool:
        return self.running_since is not None

    @classmethod
    def started(cls, at: datetime) -> SlaClock:
        return cls(elapsed=timedelta(0), running_since=at)

    def elapsed_at(self, at: datetime, calendar: BusinessCalendar) -> timedelta:
        if self.running_since is None:
            return self.elapsed
        return self.elapsed + business_time_between(self.running_since, at, calendar)

    def pause(self, at: datetime, calendar: BusinessCalendar) -> SlaClock:
        """Stop counting (awaiting the customer, resolved, closed); the time so far is kept."""
        if self.running_since is None:
            return self
        return SlaClock(elapsed=self.elapsed_at(at, calendar), running_since=None)

    def resume(self, at: datetime) -> SlaClock:
        """Count again from `at` (the customer replied). Resuming a running clock changes nothing."""
        if self.running_since is not None:
            return self
        return replace(self, running_since=at)

    def restart(self, at: datetime) -> SlaClock:
        """A fresh cycle from `at` (a reopened ticket: the resolution target runs from the reopen time)."""
        return SlaClock.started(at)

    def due(self, target: timedelta, calendar: BusinessCalendar) -> datetime | None:
        """When the target is missed if the clock keeps running; None while it is not running."""
        if self.running_since is None:
            return None
        left = max(target - self.elapsed, timedelta(0))
        return add_business_time(self.running_since, left, calendar)
