"""The one way the API expresses a period: `from` and `to`, local days of the organization, both included.

Every route that reports over a period (lead analytics, the ticket SLA report, the deal forecast) reads
`from`/`to` as `YYYY-MM-DD` days in the organization's timezone: `from` starts at local midnight of its day,
`to` ends at local midnight after its day (23 or 25 hours on a daylight-saving day). A reversed period, or
one longer than the route allows, is 400 INVALID_PERIOD naming the days. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from leadcrm.platform.bounds import CALENDAR_TEXT, day_in_calendar
from leadcrm.platform.errors import BadRequest


@dataclass(frozen=True)
class Period:
    """[starts_at, ends_at) in UTC; None on a side means unbounded."""

    starts_at: datetime | None
    ends_at: datetime | None


def zone_of(timezone: str | None) -> tzinfo:
    """The organization's timezone; an unknown or empty name falls back to UTC rather than failing a read."""
    try:
        return ZoneInfo(timezone) if timezone else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def local_midnight(day: date, zone: tzinfo) -> datetime:
    """The instant a local day starts. A midnight that does not exist (a spring-forward gap) resolves
    forward, as zoneinfo's fold=0 does; in UTC the instant is unambiguous."""
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def check_days(from_day: date | None, to_day: date | None, *, max_days: int | None = None) -> None:
    """400 INVALID_PERIOD when `from` is after `to`, a day is outside the calendar, or (with `max_days`)
    the period holds more days than that."""
    for day in (from_day, to_day):
        # The API's shared Day type refuses these first; a day at the edge of the calendar (year 1, year
        # 9999) has no instants in every timezone, so the rule keeps its own guard for any other caller.
        if day is not None and not day_in_calendar(day):
            raise BadRequest(f"A period's days are {CALENDAR_TEXT}.", code="INVALID_PERIOD", day=day.isoformat())
    if from_day is None or to_day is None:
        return
    days = {"from": from_day.isoformat(), "to": to_day.isoformat()}
    if from_day > to_day:
        raise BadRequest("The period's start (from) is after its end (to).", code="INVALID_PERIOD", **days)
    if max_days is not None and (to_day - from_day).days + 1 > max_days:
        raise BadRequest(f"A period here holds at most {max_days} days.", code="INVALID_PERIOD", **days)


def period_of(from_day: date | None, to_day: date | None, timezone: str | None) -> Period:
    """The instants of a range of the organization's days, both ends included (400 INVALID_PERIOD, see
    check_days)."""
    check_days(from_day, to_day)
    zone = zone_of(timezone)
    return Period(
        starts_at=local_midnight(from_day, zone) if from_day is not None else None,
        ends_at=local_midnight(to_day + timedelta(days=1), zone) if to_day is not None else None,
    )


def local_today(now: datetime, timezone: str | None) -> date:
    return now.astimezone(zone_of(timezone)).date()
