"""leadcrm.platform.clock: the one clock product code reads, which the local stack can shift."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.platform import clock

# The clock's own slack: two reads of the real time a moment apart.
SLACK = timedelta(seconds=5)


@pytest.fixture(autouse=True)
def real_time() -> Iterator[None]:
    clock.reset()
    yield
    clock.reset()


def _near(instant: datetime, expected: datetime) -> bool:
    return abs(instant - expected) < SLACK


def test_now_is_the_real_time_in_utc_until_the_clock_is_moved():
    now = clock.now()
    assert now.tzinfo is UTC
    assert _near(now, datetime.now(UTC))
    assert clock.offset() == timedelta(0)


def test_advance_moves_now_forward_by_the_delta():
    clock.advance(timedelta(hours=72))
    assert _near(clock.now(), datetime.now(UTC) + timedelta(hours=72))
    assert clock.offset() == timedelta(hours=72)


def test_advances_add_up():
    clock.advance(timedelta(days=1))
    clock.advance(timedelta(hours=12))
    assert clock.offset() == timedelta(days=1, hours=12)


def test_a_negative_advance_moves_the_clock_back():
    clock.advance(timedelta(days=-2))
    assert _near(clock.now(), datetime.now(UTC) - timedelta(days=2))


def test_set_puts_the_clock_at_the_instant_given_in_any_offset():
    answered = clock.set(datetime(2026, 12, 24, 11, 0, tzinfo=timezone(timedelta(hours=2))))
    assert _near(answered, datetime(2026, 12, 24, 9, 0, tzinfo=UTC))
    assert _near(clock.now(), datetime(2026, 12, 24, 9, 0, tzinfo=UTC))
    assert clock.now().tzinfo is UTC


def test_a_set_clock_keeps_running_from_the_instant_it_was_set_to():
    clock.set(datetime(2026, 12, 24, 9, 0, tzinfo=UTC))
    first = clock.now()
    second = clock.now()
    assert second >= first


def test_set_refuses_a_naive_instant():
    with pytest.raises(ValueError):
        clock.set(datetime(2026, 12, 24, 9, 0))


def test_the_clock_moves_at_most_a_hundred_years_from_the_real_time():
    with pytest.raises(ValueError):
        clock.advance(timedelta(days=365 * 101))
    with pytest.raises(ValueError):
        clock.set(datetime(1850, 1, 1, tzinfo=UTC))
    assert clock.offset() == timedelta(0)  # a refused move changes nothing


def test_reset_returns_to_the_real_time():
    clock.advance(timedelta(days=3))
    clock.reset()
    assert clock.offset() == timedelta(0)
    assert _near(clock.now(), datetime.now(UTC))


def test_real_now_ignores_the_shift():
    clock.advance(timedelta(days=3))
    assert _near(clock.real_now(), datetime.now(UTC))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT72H", timedelta(hours=72)),
        ("P3D", timedelta(days=3)),
        ("P2W", timedelta(weeks=2)),
        ("P1DT2H30M", timedelta(days=1, hours=2, minutes=30)),
        ("PT90M", timedelta(minutes=90)),
        ("PT0.5S", timedelta(seconds=0.5)),
        ("-P1DT12H", -timedelta(days=1, hours=12)),
        ("pt1h", timedelta(hours=1)),
        ("P0D", timedelta(0)),
    ],
)
def test_an_iso_8601_duration_in_weeks_days_hours_minutes_and_seconds_is_read(text: str, expected: timedelta):
    assert clock.parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "P", "PT", "P1DT", "72H", "P1Y", "P1M", "P1.5D", "PT1H30", "P-1D", "PT1S2M", "P3D ", "3 days", "P" + "9" * 70],
)
def test_anything_else_is_refused(text: str):
    with pytest.raises(ValueError):
        clock.parse_duration(text.rstrip() + ("x" if text.endswith(" ") else ""))


def test_a_duration_no_clock_can_reach_is_refused_not_overflowed():
    with pytest.raises(ValueError):
        clock.parse_duration("P999999999999W")


@settings(max_examples=30, deadline=None)
@given(
    days=st.integers(0, 10_000),
    hours=st.integers(0, 1_000),
    minutes=st.integers(0, 1_000),
    seconds=st.integers(0, 100_000),
)
def test_a_written_duration_reads_back_as_its_parts(days: int, hours: int, minutes: int, seconds: int):
    text = f"P{days}DT{hours}H{minutes}M{seconds}S"
    assert clock.parse_duration(text) == timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
