"""Edge values for every kind of request value, and the verdict the API owes each: `verdict(schema, value)`
is True inside every bound the API states (any answer but a 5xx) and False outside (a 400 in our error
shape). The verdicts are written here from the design's bounds (dates 1900-01-01 to 2999-12-31, offsets
within ±14:00, the lengths and ranges the OpenAPI document gives), not read from the code under test.

`edges(schema)` lists the fixed edges of a value's schema; `values(schema)` is a hypothesis strategy over its
whole space (years 0001-9999, offsets up to ±23:59, integers up to 2^70, text of any length). The fuzz
suite registers `formats()` with schemathesis so its generated requests carry the calendar's edges too.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

EARLIEST, LATEST = date(1900, 1, 1), date(2999, 12, 31)
MAX_OFFSET_MINUTES = 14 * 60
HUGE_TEXT = 100_000

# -- dates -----------------------------------------------------------------------------------------------------


def day_verdict(value: Any) -> bool:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return False
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return False
    return EARLIEST <= day <= LATEST


DAY_EDGES: list[Any] = [
    "1900-01-01",
    "2999-12-31",
    "0001-01-01",
    "1899-12-31",
    "3000-01-01",
    "9999-12-31",
    "2026-02-30",
    "0",
    "-1",
    0,
    -1,
    "2026-01-01T00:00:00",
]


def day_texts() -> st.SearchStrategy[str]:
    return st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)).map(date.isoformat)


# -- instants --------------------------------------------------------------------------------------------------


def _offset_text(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def instant_text(local: datetime, offset_minutes: int) -> str:
    return local.replace(tzinfo=None).isoformat(timespec="seconds") + _offset_text(offset_minutes)


def instant_verdict(value: Any) -> bool:
    """An RFC 3339 date-time with its offset, offset within ±14:00, its day as written and in UTC within the
    calendar."""
    pattern = r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z|[+-]\d{2}:\d{2})"
    match = re.fullmatch(pattern, value) if isinstance(value, str) else None
    if match is None:
        return False
    offset = 0 if match.group(3) == "Z" else int(match.group(3)[1:3]) * 60 + int(match.group(3)[4:6])
    if offset > MAX_OFFSET_MINUTES or (match.group(3) != "Z" and int(match.group(3)[4:6]) > 59):
        return False
    try:
        local = datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}")
    except ValueError:
        return False
    if not EARLIEST <= local.date() <= LATEST:
        return False
    sign = -1 if match.group(3).startswith("-") else 1
    utc = local - timedelta(minutes=sign * offset)
    return EARLIEST <= utc.date() <= LATEST


INSTANT_EDGES: list[Any] = [
    "1900-01-01T00:00:00Z",
    "2999-12-31T23:59:59Z",
    "2026-06-01T12:00:00+14:00",
    "2026-06-01T12:00:00-14:00",
    "2026-06-01T12:00:00+14:01",
    "2026-06-01T12:00:00-14:01",
    "2026-06-01T12:00:00+16:00",
    "0001-01-01T00:00:00+14:00",
    "1900-01-01T00:00:00+01:00",
    "2999-12-31T23:00:00-05:00",
    "9999-12-31T23:59:59-14:00",
    "0",
    "-1",
    0,
]


@st.composite
def instant_texts(draw: st.DrawFn) -> str:
    local = draw(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
    offset = draw(st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59))
    return instant_text(local, offset)


# -- numbers and text ------------------------------------------------------------------------------------------


def _bounds(schema: dict[str, Any]) -> tuple[float, float]:
    low = schema.get("minimum", -math.inf)
    high = schema.get("maximum", math.inf)
    if "exclusiveMinimum" in schema:
        low = max(low, schema["exclusiveMinimum"])
    if "exclusiveMaximum" in schema:
        high = min(high, schema["exclusiveMaximum"])
    return low, high


def number_verdict(schema: dict[str, Any], value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if schema.get("type") == "integer" and not (isinstance(value, int) or value.is_integer()):
        return False  # JSON Schema: 1.0 is an integer (a strict field may still refuse it: a 400, never a 5xx)
    low, high = _bounds(schema)
    exclusive_low = "exclusiveMinimum" in schema and value == schema["exclusiveMinimum"]
    exclusive_high = "exclusiveMaximum" in schema and value == schema["exclusiveMaximum"]
    return low <= value <= high and not exclusive_low and not exclusive_high


def number_edges(schema: dict[str, Any]) -> list[Any]:
    low, high = _bounds(schema)
    found: list[Any] = [2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 10**20]
    for bound in (low, high):
        if math.isfinite(bound):
            bound = int(bound) if schema.get("type") == "integer" else bound
            found += [bound, bound - 1, bound + 1]
    if schema.get("type") == "number":
        found += [1e308, -1e308, math.nan, math.inf]
    return found


def numbers(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    integers = st.integers(min_value=-(2**70), max_value=2**70)
    if schema.get("type") == "integer":
        return integers
    return integers | st.floats(allow_nan=False, allow_infinity=False)


def text_verdict(schema: dict[str, Any], value: Any) -> bool:
    if not isinstance(value, str) or "\x00" in value:
        return False
    stripped = value.strip()  # bodies are read with surrounding whitespace stripped
    if not schema.get("minLength", 0) <= len(stripped) <= schema.get("maxLength", math.inf):
        return False
    return "pattern" not in schema or re.search(schema["pattern"], stripped) is not None


def text_edges(schema: dict[str, Any]) -> list[Any]:
    longest = schema.get("maxLength")
    found: list[Any] = ["x" * HUGE_TEXT, "a\x00b"]
    if longest is not None:
        found += ["x" * longest, "x" * (longest + 1)]
    if "pattern" in schema:  # text of a shape (a wall-clock time, a currency): times with offsets, numbers
        found += ["12:00:00+16:00", "12:00:00Z", "12:00", "0", "-1"]
    return found


def texts(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    longest = schema.get("maxLength", 300)
    alphabet = st.characters(codec="utf-8", exclude_categories=("Cs",))
    shaped = st.from_regex(schema["pattern"], fullmatch=False) if "pattern" in schema else st.nothing()
    return st.text(alphabet, max_size=longest + 2) | shaped


# -- by schema -------------------------------------------------------------------------------------------------


def kind(schema: dict[str, Any]) -> str | None:
    """'day', 'instant', 'number' or 'text' for the values this module judges; None for the rest (ids, emails,
    choices), whose bounds are their format."""
    if "enum" in schema or "const" in schema:
        return None
    if schema.get("type") in ("integer", "number"):
        return "number"
    if schema.get("type") != "string":
        return None
    return {"date": "day", "date-time": "instant", None: "text"}.get(schema.get("format"))


def verdict(schema: dict[str, Any], value: Any) -> bool:
    judge = {"day": day_verdict, "instant": instant_verdict}
    which = kind(schema)
    if which in judge:
        return judge[which](value)
    return number_verdict(schema, value) if which == "number" else text_verdict(schema, value)


def edges(schema: dict[str, Any]) -> list[Any]:
    which = kind(schema)
    fixed = {"day": DAY_EDGES, "instant": INSTANT_EDGES}.get(which or "")
    if fixed is None:
        fixed = number_edges(schema) if which == "number" else text_edges(schema)
    return list(fixed)


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    which = kind(schema)
    strategy = {"day": day_texts(), "instant": instant_texts()}.get(which or "")
    if strategy is None:
        strategy = numbers(schema) if which == "number" else texts(schema)
    return strategy


def formats() -> dict[str, st.SearchStrategy[str]]:
    """Generators for schemathesis: mostly in-range values, and the edges of the calendar and of the offsets."""
    days = st.dates(min_value=EARLIEST, max_value=LATEST).map(date.isoformat)
    instants = st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2999, 12, 30), timezones=st.just(UTC))
    day_edges = st.sampled_from([d for d in DAY_EDGES if isinstance(d, str)])
    instant_edges = st.sampled_from([i for i in INSTANT_EDGES if isinstance(i, str)])
    return {
        "date": days | day_edges,
        "date-time": instants.map(lambda at: at.isoformat(timespec="seconds")) | instant_edges,
    }


def as_query(value: Any) -> str:
    """A query parameter carries text: a number as its digits, a string as itself."""
    return value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)

