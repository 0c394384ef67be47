"""The field types every request body and query parameter shares, so each bound is stated once for the API.

- Dates and instants are read from ISO 8601 text only: pydantic's lax mode would take `0` or `"0"` as a
  Unix timestamp (`to=0` as 1970-01-01), which no client means.
- One calendar (leadcrm.platform.bounds: 1900-01-01 to 2999-12-31) and UTC offsets within ±14:00.
- A wall-clock time (a task's due time) is local to the organization and carries no offset: one with an
  offset is refused rather than silently dropped.
- Integers within their column (PostgreSQL integer), numbers in JSON documents exact and finite.

A value outside is a 400 VALIDATION_FAILED naming the field (api.handler), never a 500 further down.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainSerializer,
    StrictInt,
    WithJsonSchema,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from leadcrm.platform.bounds import (
    CALENDAR_TEXT,
    INT32_MAX,
    INT32_MIN,
    JSON_SAFE_INT,
    OFFSET_TEXT,
    day_in_calendar,
    instant_in_calendar,
    offset_in_range,
)

DAY_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")
INSTANT_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})?")
WALL_CLOCK_PATTERN = r"^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?$"
WALL_CLOCK_TEXT = re.compile(WALL_CLOCK_PATTERN.strip("^$"))


# -- dates -----------------------------------------------------------------------------------------------------


def iso_day_text(value: Any) -> Any:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not DAY_TEXT.fullmatch(value):
        raise ValueError("a date is written YYYY-MM-DD")
    return value


def day_within_calendar(value: date) -> date:
    if not day_in_calendar(value):
        raise ValueError(f"a date is {CALENDAR_TEXT}")
    return value


Day = Annotated[
    date,
    BeforeValidator(iso_day_text),
    AfterValidator(day_within_calendar),
    Field(description=f"YYYY-MM-DD, {CALENDAR_TEXT}"),
]


# -- instants --------------------------------------------------------------------------------------------------


def iso_instant_text(value: Any) -> Any:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not INSTANT_TEXT.fullmatch(value):
        raise ValueError("an instant is an ISO 8601 date-time, e.g. 2026-03-01T09:30:00+02:00")
    return value


def instant_within_bounds(value: datetime) -> datetime:
    if not offset_in_range(value.utcoffset()):
        raise ValueError(f"a UTC offset is {OFFSET_TEXT}")
    if not instant_in_calendar(value):
        raise ValueError(f"an instant is {CALENDAR_TEXT}")
    return value


def with_offset(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("an instant needs its UTC offset (Z or ±hh:mm)")
    return value


def naive_as_utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


_INSTANT_DOC = f"ISO 8601 date-time, {CALENDAR_TEXT}, offset {OFFSET_TEXT}"

# An instant with its offset (a follow-up, a trial date).
Instant = Annotated[
    datetime,
    BeforeValidator(iso_instant_text),
    AfterValidator(with_offset),
    AfterValidator(instant_within_bounds),
    Field(description=_INSTANT_DOC),
]
# The same, where a value without an offset has always been read as UTC (report periods, deal evidence).
InstantUtcByDefault = Annotated[
    datetime,
    BeforeValidator(iso_instant_text),
    AfterValidator(instant_within_bounds),
    AfterValidator(naive_as_utc),
    Field(description=f"{_INSTANT_DOC}; without an offset, UTC"),
]


# -- wall-clock times ------------------------------------------------------------------------------------------


def wall_clock_text(value: Any) -> Any:
    if isinstance(value, time):
        return value.replace(tzinfo=None)
    if isinstance(value, str) and WALL_CLOCK_TEXT.fullmatch(value):
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9:.]+([Zz]|[+-].*)", value):
        raise ValueError("a wall-clock time is local to the organization's time zone: send it without an offset")
    raise ValueError("a wall-clock time is written hh:mm or hh:mm:ss")


# Local to the organization's time zone, stored without an offset, and written back as "14:30:00" (not an
# RFC 3339 time, which requires an offset: the fuzzing caught the mismatch).
WallClockTime = Annotated[
    time,
    BeforeValidator(wall_clock_text),
    PlainSerializer(lambda value: value.replace(tzinfo=None).isoformat(), return_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": WALL_CLOCK_PATTERN,
            "description": "Local wall-clock time in the organization's time zone, no offset",
        }
    ),
]


# -- text -----------------------------------------------------------------------------------------------------


def refuse_nul(value: Any) -> Any:
    """PostgreSQL text cannot hold U+0000: refused as bad input rather than failing at the statement. Walks
    lists and objects, so a keyword of a list or a value of a map is judged like a top-level string."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("text must not contain NUL characters")
    elif isinstance(value, (list, tuple)):
        for item in value:
            refuse_nul(item)
    elif isinstance(value, dict):
        for name, item in value.items():
            refuse_nul(name)
            refuse_nul(item)
    return value


# Free text in a query parameter (a search): request bodies are judged by CamelModel.
QueryText = Annotated[str, AfterValidator(refuse_nul)]


# -- numbers ---------------------------------------------------------------------------------------------------

# A JSON integer that is a column's value: never a float, never a numeric string, within the column.
Int32 = Annotated[StrictInt, Field(ge=INT32_MIN, le=INT32_MAX)]
# A number kept in a JSON document (jsonb): exact in a double, finite.
JsonInt = Annotated[int, Field(ge=-JSON_SAFE_INT, le=JSON_SAFE_INT)]
JsonFloat = Annotated[float, Field(allow_inf_nan=False, ge=-1e15, le=1e15)]


# -- optional, not nullable ------------------------------------------------------------------------------------


class _RefuseNull:
    """An optional property that may be left out but not sent as null (a PATCH of a field that cannot be
    cleared): null is refused with a 400 naming the property, and the document does not offer null. Left
    out, the property is None in Python as before (its default is not validated)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_before_validator_function(_not_null, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        document = handler(schema)
        choices = [c for c in document.get("anyOf", ()) if c.get("type") != "null"]
        if "anyOf" in document and len(choices) == 1:
            rest = {k: v for k, v in document.items() if k != "anyOf"}
            return {**choices[0], **rest}
        if "anyOf" in document:
            return {**document, "anyOf": choices}
        return document


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("may be left out, but not null")
    return value


T = TypeVar("T")
# `title: Omittable[Title] = None`: leave it out to keep the value; null is not a value it can take.
Omittable = Annotated[T | None, _RefuseNull()]
