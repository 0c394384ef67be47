"""Whether a calendar can carry an SLA target (tickets.rules.sla.scarcest_business_time): the least business
time the due-time search can find from any start. Settings are refused at save time when it is shorter than
the longest target, so that every later ticket's due time can be computed."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.tickets.rules.sla import (
    SEARCHED_WHOLE_DAYS,
    CalendarError,
    add_business_time,
    calendar_from_settings,
    dst_allowance,
    scarcest_business_time,
)

WEEKDAYS_9_TO_5 = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
MONDAYS_ONLY = {"mon": [["09:00", "10:00"]]}


def late_on(day: date) -> datetime:
    """An instant after the day's business hours (the calendars here close by 23:00)."""
    return datetime.combine(day, time(23, 30), tzinfo=UTC)


def test_without_holidays_the_search_finds_the_weekly_hours_of_its_whole_days():
    available, _ = scarcest_business_time(calendar_from_settings("UTC", WEEKDAYS_9_TO_5))
    weekdays = SEARCHED_WHOLE_DAYS // 7 * 5  # 1097 days: 156 weeks and 5 days, the least of which has 3 weekdays
    assert available == timedelta(hours=8 * (weekdays + 3))


def test_holidays_covering_every_open_day_of_the_search_leave_no_business_time():
    mondays = [date(2027, 1, 4) + timedelta(weeks=n) for n in range(SEARCHED_WHOLE_DAYS // 7 + 1)]
    calendar = calendar_from_settings("UTC", MONDAYS_ONLY, mondays)
    available, opened_on = scarcest_business_time(calendar)
    assert available == timedelta(0)
    with pytest.raises(CalendarError):
        add_business_time(late_on(opened_on), timedelta(minutes=1), calendar)


def test_one_open_day_left_in_the_holidays_is_the_business_time_found():
    mondays = [date(2027, 1, 4) + timedelta(weeks=n) for n in range(SEARCHED_WHOLE_DAYS // 7 + 1)]
    del mondays[50]
    available, _ = scarcest_business_time(calendar_from_settings("UTC", MONDAYS_ONLY, mondays))
    assert available == timedelta(hours=1)


@pytest.mark.parametrize(
    ("zone", "allowance"),
    [("UTC", timedelta(0)), ("Asia/Tokyo", timedelta(0)), ("Europe/London", timedelta(hours=4))],
)
def test_daylight_saving_is_allowed_for_once_a_year_at_its_largest_jump(zone, allowance):
    assert dst_allowance(zone) == allowance


def test_the_allowance_is_taken_from_the_business_time_found_in_a_zone_with_daylight_saving():
    utc, _ = scarcest_business_time(calendar_from_settings("UTC", WEEKDAYS_9_TO_5))
    london, _ = scarcest_business_time(calendar_from_settings("Europe/London", WEEKDAYS_9_TO_5))
    assert utc - london == timedelta(hours=4)


WEEKLY_HOURS = st.dictionaries(
    st.sampled_from(("mon", "tue", "wed", "thu", "fri", "sat", "sun")),
    st.tuples(st.integers(0, 21), st.integers(1, 2)).map(lambda r: [[f"{r[0]:02d}:00", f"{r[0] + r[1]:02d}:00"]]),
    min_size=1,
)
# Runs of holidays (whole years closed, say) somewhere in the calendar, so that the search can run dry.
HOLIDAY_RUNS = st.lists(
    st.tuples(st.dates(date(2020, 1, 1), date(2040, 1, 1)), st.integers(1, 800)), max_size=3
).map(lambda runs: sorted({start + timedelta(days=i) for start, length in runs for i in range(length)}))


@settings(max_examples=15, deadline=None)
@given(hours=WEEKLY_HOURS, holidays=HOLIDAY_RUNS)
def test_the_scarcest_start_finds_exactly_what_it_counts(hours, holidays):
    """In UTC (no daylight saving) the count is exact: the due-time search from a late start on the day it
    names finds the counted business time, and not a minute more."""
    calendar = calendar_from_settings("UTC", hours, holidays)
    available, opened_on = scarcest_business_time(calendar)
    counted = available  # UTC: no allowance
    if available > timedelta(0):
        add_business_time(late_on(opened_on), counted, calendar)
    with pytest.raises(CalendarError):
        add_business_time(late_on(opened_on), counted + timedelta(minutes=1), calendar)


@settings(max_examples=15, deadline=None)
@given(
    hours=WEEKLY_HOURS,
    holidays=HOLIDAY_RUNS,
    start=st.datetimes(datetime(2019, 1, 1), datetime(2042, 1, 1)),
    zone=st.sampled_from(("UTC", "Europe/London", "America/New_York", "Asia/Jerusalem", "Australia/Lord_Howe")),
)
def test_a_target_within_the_scarcest_business_time_is_due_from_any_start(hours, holidays, start, zone):
    calendar = calendar_from_settings(zone, hours, holidays)
    available, _ = scarcest_business_time(calendar)
    add_business_time(start.replace(tzinfo=UTC), available, calendar)  # never CalendarError
