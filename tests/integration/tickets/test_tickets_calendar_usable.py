"""Helpdesk settings the API accepts can always be used: business hours, holidays and SLA targets that
together leave a target no business time to fall due in are refused when saved (400 INVALID_CALENDAR),
and nothing of the change is kept; tickets opened afterwards get their due times."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from leadcrm.tickets.rules.sla import SEARCHED_WHOLE_DAYS
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead
from tests.support.tickets_helpers import WEEKDAYS_9_TO_5, config_call, open_ticket, set_timezone


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads and tickets publishes after commit; the bus exists."""


@pytest.fixture
def owner():
    owner = make_caller(role="owner")
    set_timezone(owner.org_id, "Europe/London")
    response = config_call(owner, "PATCH", "ticket-settings", {"businessHours": WEEKDAYS_9_TO_5})
    assert response.status == 200, response.body
    return owner


PRIORITIES = ("low", "normal", "high", "urgent")


def _every_weekday(first: date, days: int) -> list[dict[str, str]]:
    return [
        {"date": (first + timedelta(days=n)).isoformat(), "name": "Closed"}
        for n in range(days)
        if (first + timedelta(days=n)).weekday() < 5
    ]


def _settings(owner) -> dict:
    return config_call(owner, "GET", "ticket-settings").data


def test_holidays_that_close_every_business_day_of_the_search_are_refused(owner):
    before = _settings(owner)
    holidays = _every_weekday(date(2027, 1, 1), SEARCHED_WHOLE_DAYS + 7)  # about 790 weekdays
    response = config_call(owner, "PATCH", "ticket-settings", {"holidays": holidays})
    assert (response.status, response.error_code) == (400, "INVALID_CALENDAR"), response.body
    assert response.body["error"]["businessMinutes"] == 0 and response.body["error"]["openedOn"] < "2027-01-01"
    assert _settings(owner) == before


def test_holidays_that_leave_one_business_day_in_the_search_are_enough_for_short_targets(owner):
    holidays = _every_weekday(date(2027, 1, 1), SEARCHED_WHOLE_DAYS + 7)
    del holidays[400]  # one open weekday in the search: 8 business hours, enough for 4-hour targets
    policies = [{"priority": p, "firstResponseMinutes": 30, "resolutionMinutes": 240} for p in PRIORITIES]
    response = config_call(owner, "PATCH", "ticket-settings", {"holidays": holidays, "slaPolicies": policies})
    assert response.status == 200, response.body


def test_business_hours_and_holidays_saved_together_are_judged_together(owner):
    mondays = [
        {"date": (date(2027, 1, 4) + timedelta(weeks=n)).isoformat(), "name": "Closed"}
        for n in range(SEARCHED_WHOLE_DAYS // 7 + 2)
    ]
    before = _settings(owner)
    body = {"businessHours": {"mon": [["09:00", "17:00"]]}, "holidays": mondays}
    response = config_call(owner, "PATCH", "ticket-settings", body)
    assert (response.status, response.error_code) == (400, "INVALID_CALENDAR"), response.body
    assert _settings(owner) == before


def test_a_target_longer_than_the_business_time_of_the_search_is_refused(owner):
    # Three years of 40-hour weeks hold about 375 000 business minutes; a year of round-the-clock minutes does not fit.
    policy = {"priority": "low", "firstResponseMinutes": 60, "resolutionMinutes": 365 * 24 * 60}
    response = config_call(owner, "PATCH", "ticket-settings", {"slaPolicies": [policy]})
    assert (response.status, response.error_code) == (400, "INVALID_CALENDAR"), response.body
    assert response.body["error"]["priority"] == "low"
    low = next(p for p in _settings(owner)["slaPolicies"] if p["priority"] == "low")
    assert low["resolutionMinutes"] != 365 * 24 * 60


def test_the_same_target_on_a_calendar_open_round_the_clock_is_accepted(owner):
    always = {day: [["00:00", "24:00"]] for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")}
    policy = {"priority": "low", "firstResponseMinutes": 60, "resolutionMinutes": 365 * 24 * 60}
    response = config_call(owner, "PATCH", "ticket-settings", {"businessHours": always, "slaPolicies": [policy]})
    assert response.status == 200, response.body


def test_after_a_refused_change_tickets_still_get_their_due_times(owner):
    mondays = [
        {"date": (date(2027, 1, 4) + timedelta(weeks=n)).isoformat(), "name": "Closed"}
        for n in range(SEARCHED_WHOLE_DAYS // 7 + 2)
    ]
    body = {"businessHours": {"mon": [["09:00", "17:00"]]}, "holidays": mondays}
    assert config_call(owner, "PATCH", "ticket-settings", body).status == 400
    lead = create_lead(owner, "Dana Cohen", email="dana@example.com")
    ticket = open_ticket(owner, {"subject": "Help", "leadId": lead["id"], "priority": "low"})
    assert ticket.status == 201, ticket.body
    assert ticket.data["sla"]["resolutionDueAt"] is not None
