"""The bounds every value we accept stays within: one calendar, one range of UTC offsets, the integer
ranges of the columns. Pure: the API's shared field types (functions/api/fields.py) apply them to every
request, and a rule that computes with dates can rely on them.

Why these: nothing we keep is older than 1900 or planned beyond 2999, and inside that range every local day
and every instant can be computed in every time zone (year 1 at +14:00 is before year 1 in UTC, year 9999
in a zone ahead of UTC is after the last day Python can hold). Real UTC offsets run from -12:00 to +14:00;
PostgreSQL refuses a time with an offset beyond ±15:59.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

EARLIEST_DAY = date(1900, 1, 1)
LATEST_DAY = date(2999, 12, 31)
MAX_UTC_OFFSET = timedelta(hours=14)

# PostgreSQL integer (money is bigint minor units, bounded far inside by its own fields).
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# The largest integer a JSON double holds exactly: a client in JavaScript reads back what it sent.
JSON_SAFE_INT = 2**53 - 1


def day_in_calendar(day: date) -> bool:
    return EARLIEST_DAY <= day <= LATEST_DAY


def offset_in_range(offset: timedelta | None) -> bool:
    return offset is None or abs(offset) <= MAX_UTC_OFFSET


def instant_in_calendar(at: datetime) -> bool:
    """Its day as written and, for an instant with an offset, its day in UTC are both in the calendar."""
    if not day_in_calendar(at.date()):
        return False
    return at.tzinfo is None or day_in_calendar(at.astimezone(UTC).date())


CALENDAR_TEXT = f"between {EARLIEST_DAY.isoformat()} and {LATEST_DAY.isoformat()}"
OFFSET_TEXT = "within ±14:00 of UTC"
