"""The API's shared field types (functions/api/fields.py) against the bounds as the design states them
(tests/support/edge_values.py): over the whole space of dates, instants, offsets and times, a value is
accepted exactly when it is inside. No I/O: pydantic only."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from api.fields import Day, Instant, InstantUtcByDefault, Omittable, WallClockTime
from tests.support import edge_values


def accepts(adapter: TypeAdapter, value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


DAY, INSTANT, UTC_DEFAULT, WALL_CLOCK = (TypeAdapter(t) for t in (Day, Instant, InstantUtcByDefault, WallClockTime))


@settings(max_examples=300)
@given(value=edge_values.day_texts() | st.sampled_from(edge_values.DAY_EDGES))
def test_a_day_is_accepted_exactly_inside_the_calendar(value):
    assert accepts(DAY, value) == edge_values.day_verdict(value)


@settings(max_examples=300)
@given(value=edge_values.instant_texts() | st.sampled_from(edge_values.INSTANT_EDGES))
def test_an_instant_is_accepted_exactly_inside_the_calendar_and_the_offsets(value):
    assert accepts(INSTANT, value) == edge_values.instant_verdict(value)


@pytest.mark.parametrize("value", [0, -1, 1_700_000_000, "0", "-1", "1700000000", "2026-01-01"])
def test_numbers_and_bare_days_are_not_instants(value):
    """pydantic's lax mode would read these as Unix timestamps or midnight: refused instead."""
    assert not accepts(INSTANT, value) and not accepts(UTC_DEFAULT, value)


def test_an_instant_without_an_offset_is_read_as_utc_where_that_is_the_rule():
    assert UTC_DEFAULT.validate_python("2026-03-01T09:30:00").utcoffset().total_seconds() == 0
    assert not accepts(INSTANT, "2026-03-01T09:30:00")


@example("12:00:00+16:00")
@example("12:00:00+02:00")
@example("12:00Z")
@given(value=st.from_regex(r"\A\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([Zz]|[+-]\d{2}:\d{2})?\Z"))
def test_a_wall_clock_time_with_an_offset_is_refused_never_dropped(value):
    has_offset = value[-1] in "Zz" or "+" in value or "-" in value
    if has_offset:
        assert not accepts(WALL_CLOCK, value)
    elif accepts(WALL_CLOCK, value):
        assert WALL_CLOCK.validate_python(value).tzinfo is None


def test_an_omittable_value_refuses_null_and_is_documented_without_it():
    adapter = TypeAdapter(Omittable[Day])
    assert not accepts(adapter, None)
    assert adapter.json_schema().get("type") == "string" and "anyOf" not in adapter.json_schema()
