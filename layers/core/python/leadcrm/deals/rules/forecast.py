"""Forecast rules, without I/O: periods in the organization's calendar, the window asked for, win rate.

A deal belongs to the period of its expected close date while it is open or stalled, and to the period of
the organization-local day it closed on once won or lost (actuals).
"""

from __future__ import annotations

from datetime import date
from enum import StrEnum

from leadcrm.platform.errors import BadRequest


class Period(StrEnum):
    MONTH = "month"
    QUARTER = "quarter"


MONTHS = {Period.MONTH: 1, Period.QUARTER: 3}
MAX_PERIODS = 36
# The default window: two periods back (recent actuals), the current one and three ahead (the forecast).
DEFAULT_PERIODS_BACK = 2
DEFAULT_PERIODS_AHEAD = 3


def period_start(day: date, period: Period) -> date:
    months = MONTHS[period]
    return date(day.year, ((day.month - 1) // months) * months + 1, 1)


def shift(start: date, period: Period, count: int) -> date:
    """The start of the period `count` periods after the one starting at `start` (negative: before)."""
    index = start.year * 12 + (start.month - 1) + count * MONTHS[period]
    return date(index // 12, index % 12 + 1, 1)


def window(today: date, period: Period, first: date | None, last: date | None) -> tuple[date, date]:
    """[start, end): whole periods from the one holding `first` through the one holding `last`; the default
    window around `today` (the organization's local date) for what is not given. 400 when reversed or over
    MAX_PERIODS periods."""
    current = period_start(today, period)
    start = period_start(first, period) if first else shift(current, period, -DEFAULT_PERIODS_BACK)
    end = shift(period_start(last, period), period, 1) if last else shift(current, period, DEFAULT_PERIODS_AHEAD + 1)
    if end <= start:
        raise BadRequest("`from` must not be after `to`.", code="INVALID_PERIOD")
    if shift(start, period, MAX_PERIODS) < end:
        raise BadRequest(f"A forecast covers at most {MAX_PERIODS} intervals.", code="INVALID_PERIOD")
    return start, end


def win_rate(won: int, lost: int) -> float | None:
    """Won ÷ (won + lost) by count, to 4 places; None when nothing closed."""
    closed = won + lost
    return None if closed == 0 else round(won / closed, 4)
