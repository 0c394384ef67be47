"""SLA arithmetic on a business-hours calendar (tickets.rules.sla): due times and elapsed business time across
nights, weekends, holidays, pauses and daylight-saving changes, in the organization's timezone."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from leadcrm.tickets.rules.sla import (
    ALWAYS_OPEN,
    CalendarError,
    SlaClock,
    add_business_time,
    business_time_between,
    calendar_from_settings,
    calendar_to_settings,
)

LONDON = ZoneInfo("Europe/London")
JERUSALEM = ZoneInfo("Asia/Jerusalem")
WEEKDAYS_9_TO_5 = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
# The Israeli working week: Sunday to Thursday.
SUNDAY_TO_THURSDAY_8_TO_5 = {day: [["08:00", "17:00"]] for day in ("sun", "mon", "tue", "wed", "thu")}


def london(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=LONDON)


def jerusalem(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=JERUSALEM)


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


@pytest.fixture
def office():
    """Europe/London, Monday to Friday 09:00–17:00."""
    return calendar_from_settings("Europe/London", WEEKDAYS_9_TO_5)


# -- due times -------------------------------------------------------------------------------------------------


def test_a_target_inside_business_hours_is_due_the_same_day(office):
    assert add_business_time(london("2026-03-02T10:00"), hours(2), office) == london("2026-03-02T12:00")


def test_time_runs_out_exactly_at_closing_and_is_due_then_not_next_morning(office):
    assert add_business_time(london("2026-03-02T15:00"), hours(2), office) == london("2026-03-02T17:00")


def test_the_night_does_not_count(office):
    assert add_business_time(london("2026-03-02T16:00"), hours(2), office) == london("2026-03-03T10:00")


def test_the_weekend_does_not_count(office):
    assert add_business_time(london("2026-03-06T16:00"), hours(2), office) == london("2026-03-09T10:00")


def test_a_ticket_opened_on_saturday_starts_counting_on_monday_morning(office):
    assert add_business_time(london("2026-03-07T12:00"), hours(1), office) == london("2026-03-09T10:00")


def test_a_ticket_opened_before_opening_starts_counting_at_opening(office):
    assert add_business_time(london("2026-03-03T06:30"), hours(1), office) == london("2026-03-03T10:00")


def test_a_holiday_does_not_count():
    calendar = calendar_from_settings("Europe/London", WEEKDAYS_9_TO_5, [date(2026, 3, 9)])
    # Friday 16:00 + 2h: one hour on Friday, Monday is a holiday, one hour on Tuesday.
    assert add_business_time(london("2026-03-06T16:00"), hours(2), calendar) == london("2026-03-10T10:00")


def test_a_lunch_break_does_not_count():
    calendar = calendar_from_settings("Europe/London", {"mon": [["09:00", "12:00"], ["13:00", "17:00"]]})
    assert add_business_time(london("2026-03-02T11:00"), hours(2), calendar) == london("2026-03-02T14:00")


def test_a_target_longer_than_a_day_spans_several_business_days(office):
    # 20 business hours from Wednesday 09:00: Wed 8h, Thu 8h, Fri 4h.
    assert add_business_time(london("2026-03-04T09:00"), hours(20), office) == london("2026-03-06T13:00")


def test_the_answer_is_an_instant_in_utc(office):
    due = add_business_time(london("2026-07-06T10:00"), hours(1), office)  # BST, UTC+1
    assert due.tzinfo is UTC and due == datetime(2026, 7, 6, 10, 0, tzinfo=UTC)


def test_a_zero_target_is_due_at_once(office):
    start = london("2026-03-07T12:00")
    assert add_business_time(start, timedelta(0), office) == start


# -- daylight saving -------------------------------------------------------------------------------------------


def test_business_hours_keep_their_wall_clock_across_the_spring_change_in_london(office):
    # Friday 27 March 16:00 GMT + 2h: one hour Friday, then Monday 30 March 10:00 BST (09:00 UTC).
    due = add_business_time(london("2026-03-27T16:00"), hours(2), office)
    assert due == london("2026-03-30T10:00")
    assert due == datetime(2026, 3, 30, 9, 0, tzinfo=UTC)


def test_a_round_the_clock_calendar_counts_real_hours_on_the_short_spring_day():
    always = calendar_from_settings("Europe/London", ALWAYS_OPEN)
    # Sunday 29 March has 23 hours in London: 24 business hours after Saturday 23:00 is Monday 00:00 BST.
    assert add_business_time(london("2026-03-28T23:00"), hours(24), always) == london("2026-03-30T00:00")
    assert business_time_between(london("2026-03-29T00:00"), london("2026-03-30T00:00"), always) == hours(23)


def test_a_round_the_clock_calendar_counts_real_hours_on_the_long_autumn_day():
    always = calendar_from_settings("Europe/London", ALWAYS_OPEN)
    assert business_time_between(london("2026-10-24T12:00"), london("2026-10-25T12:00"), always) == hours(25)


def test_hours_that_fall_into_the_spring_gap_do_not_exist():
    calendar = calendar_from_settings("Europe/London", {"sun": [["00:30", "03:00"]]})
    # 01:00–02:00 does not exist on 29 March 2026: 00:30–01:00 GMT then 02:00–03:00 BST.
    assert business_time_between(london("2026-03-29T00:00"), london("2026-03-29T04:00"), calendar) == hours(1.5)


def test_the_israeli_week_across_jerusalems_spring_change():
    calendar = calendar_from_settings("Asia/Jerusalem", SUNDAY_TO_THURSDAY_8_TO_5)
    # Thursday 26 March 16:00 IST (UTC+2) + 2h: one hour Thursday; Friday and Saturday closed (the clocks move
    # on Friday 27 March); Sunday 29 March 09:00 IDT (UTC+3) = 06:00 UTC.
    due = add_business_time(jerusalem("2026-03-26T16:00"), hours(2), calendar)
    assert due == jerusalem("2026-03-29T09:00")
    assert due == datetime(2026, 3, 29, 6, 0, tzinfo=UTC)
    assert business_time_between(jerusalem("2026-03-26T16:00"), due, calendar) == hours(2)


def test_the_israeli_week_across_jerusalems_autumn_change():
    calendar = calendar_from_settings("Asia/Jerusalem", SUNDAY_TO_THURSDAY_8_TO_5)
    # Thursday 22 October 16:00 IDT + 2h → Sunday 25 October (the change night) 09:00 IST = 07:00 UTC.
    due = add_business_time(jerusalem("2026-10-22T16:00"), hours(2), calendar)
    assert due == datetime(2026, 10, 25, 7, 0, tzinfo=UTC)


# -- elapsed business time -------------------------------------------------------------------------------------


def test_elapsed_business_time_skips_the_night_and_the_weekend(office):
    assert business_time_between(london("2026-03-06T15:00"), london("2026-03-09T11:00"), office) == hours(4)


def test_elapsed_business_time_skips_holidays():
    calendar = calendar_from_settings("Europe/London", WEEKDAYS_9_TO_5, [date(2026, 3, 9)])
    assert business_time_between(london("2026-03-06T15:00"), london("2026-03-10T11:00"), calendar) == hours(4)


def test_elapsed_business_time_is_zero_outside_hours_and_backwards(office):
    assert business_time_between(london("2026-03-07T08:00"), london("2026-03-08T20:00"), office) == timedelta(0)
    assert business_time_between(london("2026-03-03T12:00"), london("2026-03-02T12:00"), office) == timedelta(0)


def test_elapsed_and_due_agree(office):
    start = london("2026-03-05T14:30")
    for target in (hours(0.5), hours(3), hours(11), hours(40)):
        assert business_time_between(start, add_business_time(start, target, office), office) == target


# -- the clock: runs, pauses, resumes, restarts ------------------------------------------------------------------


def test_a_running_clock_is_due_target_business_time_after_it_started(office):
    clock = SlaClock.started(london("2026-03-02T09:00"))
    assert clock.due(hours(8), office) == london("2026-03-02T17:00")


def test_a_paused_clock_has_no_due_time_and_keeps_the_time_used(office):
    clock = SlaClock.started(london("2026-03-02T09:00")).pause(london("2026-03-02T11:00"), office)
    assert clock.due(hours(8), office) is None
    assert clock.elapsed == hours(2)
    assert clock.elapsed_at(london("2026-03-05T12:00"), office) == hours(2)


def test_time_awaiting_the_customer_does_not_count(office):
    # Two hours used on Monday, paused until Wednesday 10:00: the six hours left run to Wednesday 16:00.
    clock = (
        SlaClock.started(london("2026-03-02T09:00"))
        .pause(london("2026-03-02T11:00"), office)
        .resume(london("2026-03-04T10:00"))
    )
    assert clock.due(hours(8), office) == london("2026-03-04T16:00")


def test_a_pause_over_a_weekend_and_a_holiday_resumes_with_the_time_left():
    calendar = calendar_from_settings("Europe/London", WEEKDAYS_9_TO_5, [date(2026, 3, 9)])
    clock = (
        SlaClock.started(london("2026-03-06T13:00"))  # Friday
        .pause(london("2026-03-06T16:00"), calendar)  # 3h used
        .resume(london("2026-03-08T12:00"))  # the customer replies on Sunday; Monday is a holiday
    )
    assert clock.due(hours(8), calendar) == london("2026-03-10T14:00")  # 5h left from Tuesday 09:00


def test_a_pause_across_the_dst_change_keeps_wall_clock_hours(office):
    clock = (
        SlaClock.started(london("2026-03-27T15:00"))
        .pause(london("2026-03-27T16:00"), office)
        .resume(london("2026-03-28T10:00"))  # Saturday: counting starts Monday
    )
    assert clock.due(hours(3), office) == london("2026-03-30T11:00")


def test_pausing_twice_or_resuming_a_running_clock_changes_nothing(office):
    paused = SlaClock.started(london("2026-03-02T09:00")).pause(london("2026-03-02T10:00"), office)
    assert paused.pause(london("2026-03-02T12:00"), office) == paused
    running = SlaClock.started(london("2026-03-02T09:00"))
    assert running.resume(london("2026-03-02T12:00")) == running


def test_a_restart_runs_from_the_reopen_time_with_nothing_used(office):
    clock = SlaClock.started(london("2026-03-02T09:00")).pause(london("2026-03-02T16:00"), office)
    reopened = clock.restart(london("2026-03-04T11:00"))
    assert reopened.elapsed == timedelta(0)
    assert reopened.due(hours(8), office) == london("2026-03-05T11:00")


def test_a_clock_past_its_target_is_due_at_once_when_it_resumes(office):
    clock = SlaClock(elapsed=hours(9), running_since=None).resume(london("2026-03-03T10:00"))
    assert clock.due(hours(8), office) == london("2026-03-03T10:00")


# -- calendars --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timezone", "hours_by_day", "message"),
    [
        ("Mars/Olympus", WEEKDAYS_9_TO_5, "not a known timezone"),
        ("Europe/London", {"mon": [["17:00", "09:00"]]}, "ends before it starts"),
        ("Europe/London", {"mon": [["09:00", "13:00"], ["12:00", "17:00"]]}, "overlap"),
        ("Europe/London", {"funday": [["09:00", "17:00"]]}, "not a weekday"),
        ("Europe/London", {"mon": [["9am", "17:00"]]}, "HH:MM"),
        ("Europe/London", {}, "no business hours"),
    ],
)
def test_an_unusable_calendar_is_refused_with_the_reason(timezone, hours_by_day, message):
    with pytest.raises(CalendarError, match=message):
        calendar_from_settings(timezone, hours_by_day)


def test_a_calendar_whose_every_day_is_a_holiday_never_comes_due():
    everyday = [date(2026, 1, 1) + timedelta(days=n) for n in range(4 * 366)]
    calendar = calendar_from_settings("Europe/London", WEEKDAYS_9_TO_5, everyday)
    with pytest.raises(CalendarError):
        add_business_time(london("2026-01-01T10:00"), hours(1), calendar)


def test_naive_datetimes_are_refused(office):
    with pytest.raises(ValueError, match="timezone-aware"):
        add_business_time(datetime(2026, 3, 2, 10, 0), hours(1), office)


def test_a_calendar_reads_back_as_it_was_given():
    given = {"mon": [["09:00", "12:00"], ["13:00", "17:00"]], "sun": [["00:00", "24:00"]]}
    assert calendar_to_settings(calendar_from_settings("Asia/Jerusalem", given)) == given
