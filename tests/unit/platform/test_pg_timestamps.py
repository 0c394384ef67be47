"""Dates and timestamps read from PostgreSQL's text output by fromisoformat (leadcrm.platform.db.timestamps):
every instant PostgreSQL writes in its ISO DateStyle reads back as that instant with that offset, as pg8000's
own parser reads it; what `datetime` cannot hold (infinity, BC, years past 9999) comes back as pg8000 gives it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pg8000 import converters

from leadcrm.platform.db.timestamps import date_in, timestamp_in, timestamptz_in

# PostgreSQL accepts offsets up to ±15:59:59 (LMT offsets carry seconds, e.g. +05:53:28).
OFFSETS = st.integers(min_value=-(16 * 3600 - 1), max_value=16 * 3600 - 1).map(
    lambda seconds: timezone(timedelta(seconds=seconds))
)
# pg8000's own parser reads whole-minute offsets only.
MINUTE_OFFSETS = st.integers(min_value=-(16 * 60 - 1), max_value=16 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
# Local wall-clock values that stay within years 1..9999 whatever the offset.
WALL_CLOCK = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))


def pg_offset(offset: timedelta) -> str:
    """How PostgreSQL writes a UTC offset: ±HH, then :MM and :SS only when not zero."""
    sign = "-" if offset < timedelta(0) else "+"
    seconds = abs(int(offset.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}"
    if minutes or seconds:
        text += f":{minutes:02d}"
    if seconds:
        text += f":{seconds:02d}"
    return text


def pg_timestamp(value: datetime) -> str:
    """PostgreSQL's ISO output: four-digit years (zero-padded), a space, trailing zeros of the fraction cut."""
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    if value.tzinfo is not None:
        text += pg_offset(value.utcoffset())
    return text


@settings(max_examples=500)
@given(WALL_CLOCK, OFFSETS)
def test_a_timestamptz_reads_back_as_the_same_instant_with_the_same_offset(wall_clock, offset):
    value = wall_clock.replace(tzinfo=offset)
    parsed = timestamptz_in(pg_timestamp(value))
    assert parsed == value
    assert parsed.utcoffset() == value.utcoffset()


@settings(max_examples=300)
@given(WALL_CLOCK, MINUTE_OFFSETS)
def test_a_timestamptz_reads_as_pg8000_reads_it(wall_clock, offset):
    text = pg_timestamp(wall_clock.replace(tzinfo=offset))
    ours, theirs = timestamptz_in(text), converters.timestamptz_in(text)
    assert ours == theirs
    assert ours.utcoffset() == theirs.utcoffset()


@settings(max_examples=300)
@given(WALL_CLOCK)
def test_a_timestamp_without_zone_reads_back_naive_and_as_pg8000_reads_it(wall_clock):
    text = pg_timestamp(wall_clock)
    assert timestamp_in(text) == wall_clock == converters.timestamp_in(text)
    assert timestamp_in(text).tzinfo is None


@settings(max_examples=300)
@given(st.dates())
def test_a_date_reads_back_as_that_date(day):
    text = f"{day.year:04d}-{day.month:02d}-{day.day:02d}"
    assert date_in(text) == day == converters.date_in(text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-02 06:20:43.5+00",
        "2026-12-02 06:20:43+05:30",
        "2026-12-02 06:20:43-09:30",
        "2026-01-01 00:00:00+14",
        "0999-01-01 00:00:00+00",
        "0001-01-01 00:00:00+00",
        "9999-12-31 23:59:59.999999+00",
    ],
)
def test_postgresqls_own_edge_values_read_as_pg8000_reads_them(text):
    assert timestamptz_in(text) == converters.timestamptz_in(text)


@pytest.mark.parametrize(
    ("parse", "theirs", "text"),
    [
        (timestamptz_in, converters.timestamptz_in, "infinity"),
        (timestamptz_in, converters.timestamptz_in, "-infinity"),
        (timestamptz_in, converters.timestamptz_in, "0044-03-15 12:00:00+00 BC"),
        (timestamptz_in, converters.timestamptz_in, "10000-01-01 00:00:00+00"),
        (timestamp_in, converters.timestamp_in, "infinity"),
        (date_in, converters.date_in, "-infinity"),
        (date_in, converters.date_in, "0044-03-15 BC"),
        (date_in, converters.date_in, "10000-01-01"),
    ],
)
def test_what_datetime_cannot_hold_comes_back_as_pg8000_gives_it(parse, theirs, text):
    assert parse(text) == theirs(text)


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (timestamptz_in, "0044-03-15 12:00:00+00 BC"),
        (timestamp_in, "0044-03-15 12:00:00 BC"),
        (date_in, "0044-03-15 BC"),
    ],
)
def test_a_bc_value_is_the_text_never_the_same_year_ad(parse, text):
    assert parse(text) == text


def test_a_local_mean_time_offset_with_seconds_reads_as_that_offset():
    parsed = timestamptz_in("1800-01-01 00:00:00+05:53:28")
    assert parsed.utcoffset() == timedelta(hours=5, minutes=53, seconds=28)
    assert parsed == datetime(1799, 12, 31, 18, 6, 32, tzinfo=UTC)


def test_utc_reads_as_utc():
    assert timestamptz_in("2026-12-02 06:20:43+00") == datetime(2026, 12, 2, 6, 20, 43, tzinfo=UTC)
