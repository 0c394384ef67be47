"""Rules of the analytics figures (leadcrm.analytics.rules.reports): conversion rate, periods and months in the
organization's timezone (across daylight-saving changes), the funnel, the attribution window."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from leadcrm.analytics.rules.reports import (
    DEFAULT_ATTRIBUTION_WINDOW,
    FunnelStep,
    attribution_window,
    conversion_percent,
    funnel,
    month_start,
    period_of,
)
from leadcrm.platform.errors import BadRequest


@pytest.mark.parametrize(
    ("wins", "total", "percent"),
    [(0, 0, 0), (0, 5, 0), (1, 3, 33), (2, 3, 67), (1, 8, 13), (1, 200, 1), (1, 201, 0), (3, 3, 100), (5, 8, 63)],
)
def test_the_conversion_rate_is_a_whole_percent_with_halves_rounded_up(wins, total, percent):
    assert conversion_percent(wins, total) == percent


def test_a_period_runs_from_local_midnight_of_from_to_local_midnight_after_to():
    period = period_of(date(2026, 1, 10), date(2026, 1, 12), "Asia/Jerusalem")  # UTC+2 in winter
    assert period.starts_at == datetime(2026, 1, 9, 22, 0, tzinfo=UTC)
    assert period.ends_at == datetime(2026, 1, 12, 22, 0, tzinfo=UTC)


def test_a_one_day_period_is_23_hours_on_the_spring_forward_day():
    period = period_of(date(2026, 3, 29), date(2026, 3, 29), "Europe/London")
    assert period.starts_at == datetime(2026, 3, 29, 0, 0, tzinfo=UTC)
    assert period.ends_at - period.starts_at == timedelta(hours=23)


def test_a_one_day_period_is_25_hours_on_the_fall_back_day():
    period = period_of(date(2026, 10, 25), date(2026, 10, 25), "Europe/London")
    assert period.ends_at - period.starts_at == timedelta(hours=25)


def test_an_open_side_of_a_period_is_unbounded():
    assert period_of(None, None, "UTC").starts_at is None
    assert period_of(date(2026, 1, 1), None, "UTC").ends_at is None


def test_from_after_to_is_refused_with_invalid_period():
    with pytest.raises(BadRequest) as refused:
        period_of(date(2026, 2, 2), date(2026, 2, 1), "UTC")
    assert refused.value.code == "INVALID_PERIOD"


@pytest.mark.parametrize("day", [date(1, 1, 1), date(1899, 12, 31), date(3000, 1, 1), date(9999, 12, 31)])
def test_a_day_at_the_edge_of_the_calendar_is_refused_with_invalid_period(day):
    with pytest.raises(BadRequest) as refused:
        period_of(day, None, "Pacific/Kiritimati")
    assert refused.value.code == "INVALID_PERIOD"
    with pytest.raises(BadRequest):
        period_of(None, day, "America/Los_Angeles")


def test_from_equal_to_to_is_one_day():
    period = period_of(date(2026, 2, 1), date(2026, 2, 1), "UTC")
    assert period.ends_at - period.starts_at == timedelta(days=1)


def test_this_month_starts_at_local_midnight_of_the_first_in_summer_time():
    # 1 April 00:30 in London is 31 March 23:30 UTC: it is already April there.
    now = datetime(2026, 3, 31, 23, 30, tzinfo=UTC)
    assert month_start(now, "Europe/London") == datetime(2026, 3, 31, 23, 0, tzinfo=UTC)
    assert month_start(now, "UTC") == datetime(2026, 3, 1, 0, 0, tzinfo=UTC)


def test_this_month_began_in_winter_time_although_it_is_summer_time_now():
    # In London, March began at UTC+0; on 31 March (after the change) the month's start is still 00:00 UTC.
    now = datetime(2026, 3, 31, 12, 0, tzinfo=UTC)
    assert month_start(now, "Europe/London") == datetime(2026, 3, 1, 0, 0, tzinfo=UTC)


def test_this_month_in_november_began_before_the_fall_back_in_new_york():
    # November began at EDT (UTC-4); the clocks went back on the 1st at 2:00, after midnight.
    now = datetime(2026, 11, 15, tzinfo=UTC)
    assert month_start(now, "America/New_York") == datetime(2026, 11, 1, 4, 0, tzinfo=UTC)


def test_a_midnight_in_a_spring_forward_gap_starts_the_month_when_the_clock_jumps():
    # Santiago moved its clocks at 24:00 on 6 September 2026 (there is no 00:00 local); the instant is unambiguous.
    start = month_start(datetime(2026, 9, 20, tzinfo=UTC), "America/Santiago")
    assert start.tzinfo is UTC
    assert start <= datetime(2026, 9, 1, 5, 0, tzinfo=UTC)


def test_an_unknown_timezone_reads_as_utc():
    assert month_start(datetime(2026, 5, 5, tzinfo=UTC), "Mars/Olympus") == datetime(2026, 5, 1, tzinfo=UTC)


def test_the_funnel_counts_a_lead_at_every_step_up_to_its_furthest():
    rows = funnel({0: 5, 1: 3, 2: 1, 3: 1})  # 10 leads: 5 never left new, 3 contacted, 1 trial, 1 won
    assert [(r.step, r.reached, r.conversion_from_previous) for r in rows] == [
        (FunnelStep.NEW, 10, None),
        (FunnelStep.CONTACTED, 5, 50),
        (FunnelStep.TRIAL, 2, 40),
        (FunnelStep.WON, 1, 50),
    ]


def test_an_empty_funnel_converts_nothing():
    assert [(r.reached, r.conversion_from_previous) for r in funnel({})] == [(0, None), (0, 0), (0, 0), (0, 0)]


@pytest.mark.parametrize(
    ("raw", "days"), [("", 90), ("30", 30), ("0", 90), ("-5", 90), ("abc", 90), ("730", 730), ("731", 90)]
)
def test_the_attribution_window_is_configurable_and_defaults_to_90_days(raw, days):
    assert attribution_window({"ATTRIBUTION_WINDOW_DAYS": raw}) == timedelta(days=days)
    assert timedelta(days=90) == DEFAULT_ATTRIBUTION_WINDOW
