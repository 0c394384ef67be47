"""The engine's connections read PostgreSQL's own text output of dates and timestamps (leadcrm.platform.db
.timestamps): any instant, sent and read back in any session time zone (half hours, +14, local mean time
with seconds), is the same instant with the offset PostgreSQL wrote; what `datetime` cannot hold is
answered as pg8000 answers it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from leadcrm.platform.db.engine import get_engine

ZONES = [
    "UTC",
    "Asia/Kolkata",  # +05:30, and +05:53:28 local mean time before 1854
    "Asia/Kathmandu",  # +05:45
    "Pacific/Kiritimati",  # +14
    "America/St_Johns",  # -03:30 / -02:30
    "Pacific/Chatham",  # +12:45 / +13:45
    "Africa/Monrovia",  # -00:44:30 until 1972
    "Europe/Amsterdam",  # +00:19:32 until 1937
]
INSTANTS = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))


def _read_back(zone: str, value: datetime) -> tuple[datetime, datetime]:
    with get_engine().begin() as conn:
        conn.execute(text(f"SET LOCAL TIME ZONE '{zone}'"))
        row = conn.execute(
            text("SELECT CAST(:v AS timestamptz) AS tz, CAST(CAST(:v AS timestamptz) AS timestamp) AS local"),
            {"v": value},
        ).one()
    return row.tz, row.local


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(INSTANTS, st.sampled_from(ZONES))
def test_an_instant_reads_back_as_itself_in_any_session_time_zone(value, zone):
    read, local = _read_back(zone, value)
    assert read == value
    assert read.replace(tzinfo=None) - read.utcoffset() == value.replace(tzinfo=None)
    assert local == read.replace(tzinfo=None)  # the wall clock PostgreSQL wrote, offset and all


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT CAST('infinity' AS timestamptz)", "infinity"),
        ("SELECT CAST('-infinity' AS timestamptz)", "-infinity"),
        ("SELECT CAST('-infinity' AS date)", "-infinity"),
        ("SELECT CAST('0044-03-15 12:00:00+00 BC' AS timestamptz)", "0044-03-15 12:00:00+00 BC"),
        ("SELECT CAST('0044-03-15 BC' AS date)", "0044-03-15 BC"),
        ("SELECT CAST('0999-06-01' AS date)", date(999, 6, 1)),
        ("SELECT CAST('0999-06-01 10:00:00.5+00' AS timestamptz)", datetime(999, 6, 1, 10, 0, 0, 500000, tzinfo=UTC)),
    ],
)
def test_edge_values_read_as_before(sql, expected):
    with get_engine().begin() as conn:
        conn.execute(text("SET LOCAL TIME ZONE 'UTC'"))
        assert conn.execute(text(sql)).scalar_one() == expected


def test_a_timestamp_with_microseconds_keeps_them():
    value = datetime(2026, 12, 2, 6, 20, 43, 123456, tzinfo=UTC)
    assert _read_back("Asia/Kolkata", value)[0] == value
    assert _read_back("Asia/Kolkata", value)[0].utcoffset() == timedelta(hours=5, minutes=30)
