"""SLA timers on real tickets: targets per priority on the organization's calendar (its timezone, holidays,
a DST change), the clock pausing while awaiting the customer, resuming on the reply, stopping when closed,
restarting from the reopen time; breaches recorded where a target was missed."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from leadcrm.tickets import requester_actions, staff_actions
from leadcrm.tickets.rules.routing import Priority
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead
from tests.support.tickets_helpers import (
    WEEKDAYS_9_TO_5,
    actor_of,
    configure,
    in_uow,
    new_ticket,
    set_timezone,
    ticket_history,
    ticket_row,
)

LONDON = ZoneInfo("Europe/London")
JERUSALEM = ZoneInfo("Asia/Jerusalem")


def london(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=LONDON)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes after commit; the bus exists."""


@pytest.fixture
def owner():
    owner = make_caller(role="owner")
    set_timezone(owner.org_id, "Europe/London")
    configure(
        owner.org_id,
        business_hours=WEEKDAYS_9_TO_5,
        holidays=[(date(2026, 3, 9), "Staff day")],
        sla_policies=[("normal", 120, 480), ("urgent", 30, 240)],
    )
    return owner


@pytest.fixture
def lead(owner):
    return create_lead(owner, "Dana Cohen", email="dana@example.com")


def _assign_and_respond(owner, ticket_id, at):
    actor = actor_of(owner)
    in_uow(staff_actions.assign, actor, ticket_id, assignee_user_id=owner.user.id, queue_id=None, now=at)
    return in_uow(staff_actions.respond, actor, ticket_id, now=at)


def test_targets_come_from_the_priority_and_run_on_business_hours(owner, lead):
    # Friday 16:00: first response (2h) is due Tuesday 10:00, as Monday 9 March is the organization's holiday.
    ticket = new_ticket(owner.org_id, london("2026-03-06T16:00"), lead_id=lead["id"])
    assert ticket["first_response_due_at"] == london("2026-03-10T10:00")
    # Resolution (8h): 1h Friday, 7h Tuesday → Tuesday 16:00.
    assert ticket["resolution_due_at"] == london("2026-03-10T16:00")
    urgent = new_ticket(owner.org_id, london("2026-03-06T16:00"), lead_id=lead["id"], priority=Priority.URGENT)
    assert urgent["first_response_due_at"] == london("2026-03-06T16:30")


def test_editing_a_policy_does_not_move_an_open_ticket(owner, lead):
    ticket = new_ticket(owner.org_id, london("2026-03-02T09:00"), lead_id=lead["id"])
    configure(owner.org_id, sla_policies=[("normal", 60, 240)])
    assert ticket_row(ticket["id"])["first_response_due_at"] == london("2026-03-02T11:00")
    assert new_ticket(owner.org_id, london("2026-03-02T09:00"), lead_id=lead["id"])["first_response_due_at"] == london(
        "2026-03-02T10:00"
    )


def test_time_awaiting_the_customer_does_not_count_against_resolution(owner, lead):
    actor = actor_of(owner)
    ticket = new_ticket(owner.org_id, london("2026-03-02T09:00"), lead_id=lead["id"])
    _assign_and_respond(owner, ticket["id"], london("2026-03-02T10:00"))
    paused = in_uow(staff_actions.request_info, actor, ticket["id"], now=london("2026-03-02T11:00"))
    assert (paused["resolution_elapsed_seconds"], paused["sla_running_since"], paused["resolution_due_at"]) == (
        2 * 3600,
        None,
        None,
    )
    # The customer answers on Wednesday 10:00: the six business hours left run to 16:00.
    resumed = in_uow(
        requester_actions.customer_reply,
        owner.org_id,
        ticket["id"],
        message="Tuesday yoga",
        actor_user_id=None,
        now=london("2026-03-04T10:00"),
    )
    assert resumed["status"] == "in_progress"
    assert resumed["resolution_due_at"] == london("2026-03-04T16:00")


def test_resolving_records_the_business_time_used_and_pauses_the_clock_by_default(owner, lead):
    actor = actor_of(owner)
    ticket = new_ticket(owner.org_id, london("2026-03-06T16:00"), lead_id=lead["id"])
    _assign_and_respond(owner, ticket["id"], london("2026-03-06T16:30"))
    resolved = in_uow(staff_actions.resolve, actor, ticket["id"], resolution="Fixed", now=london("2026-03-10T10:00"))
    assert resolved["resolution_seconds"] == 2 * 3600  # Friday 16–17, (holiday Monday), Tuesday 9–10
    assert resolved["first_response_seconds"] == 30 * 60
    assert (resolved["sla_running_since"], resolved["resolution_due_at"]) == (None, None)


def test_a_policy_that_keeps_resolved_running_keeps_the_due_time(owner, lead):
    configure(owner.org_id, resolved_pauses_timer=False)
    ticket = new_ticket(owner.org_id, london("2026-03-02T09:00"), lead_id=lead["id"])
    _assign_and_respond(owner, ticket["id"], london("2026-03-02T10:00"))
    resolved = in_uow(
        staff_actions.resolve, actor_of(owner), ticket["id"], resolution="x", now=london("2026-03-02T12:00")
    )
    assert resolved["resolution_due_at"] == london("2026-03-02T17:00")


def test_closing_stops_the_clock(owner, lead):
    ticket = new_ticket(owner.org_id, london("2026-03-02T09:00"), lead_id=lead["id"])
    _assign_and_respond(owner, ticket["id"], london("2026-03-02T10:00"))
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="x", now=london("2026-03-02T12:00"))
    closed = in_uow(
        requester_actions.confirm, owner.org_id, ticket["id"], actor_user_id=None, now=london("2026-03-02T13:00")
    )
    assert (closed["status"], closed["sla_running_since"], closed["resolution_due_at"]) == ("closed", None, None)


def test_a_reopened_ticket_runs_a_fresh_resolution_target_from_the_reopen_time(owner, lead):
    ticket = new_ticket(owner.org_id, london("2026-03-02T09:00"), lead_id=lead["id"])
    _assign_and_respond(owner, ticket["id"], london("2026-03-02T10:00"))
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="x", now=london("2026-03-02T16:00"))
    reopened = in_uow(
        requester_actions.reopen,
        owner.org_id,
        ticket["id"],
        reason="Still broken",
        actor_user_id=None,
        now=london("2026-03-04T11:00"),
    )
    assert (reopened["sla_cycle_started_at"], reopened["resolution_elapsed_seconds"]) == (london("2026-03-04T11:00"), 0)
    assert reopened["resolution_due_at"] == london("2026-03-05T11:00")  # 8 business hours later
    [change] = [e for e in ticket_history(ticket["id"], "status_changed") if e["to_status"] == "reopened"]
    assert change["payload"] == {"trigger": "reopen", "reason": "Still broken"}


def test_a_first_response_after_its_due_time_is_recorded_as_a_breach_at_the_due_time(owner, lead):
    ticket = new_ticket(owner.org_id, london("2026-03-02T09:00"), lead_id=lead["id"])
    responded = _assign_and_respond(owner, ticket["id"], london("2026-03-02T12:00"))
    assert responded["first_response_breached_at"] == london("2026-03-02T11:00")
    assert responded["breach_count"] == 1
    [breach] = ticket_history(ticket["id"], "sla_breached")
    assert breach["payload"]["target"] == "first_response"
    assert breach["payload"]["accountableUserId"] == str(owner.user.id)


def test_due_times_follow_the_organizations_timezone_across_a_dst_change(lead, owner):
    set_timezone(owner.org_id, "Asia/Jerusalem")
    configure(
        owner.org_id, business_hours={d: [["08:00", "17:00"]] for d in ("sun", "mon", "tue", "wed", "thu")}, holidays=[]
    )
    # Thursday 26 March 2026 16:00 IST; Israel moves to summer time on Friday 27 March.
    created = datetime(2026, 3, 26, 16, 0, tzinfo=JERUSALEM)
    ticket = new_ticket(owner.org_id, created, lead_id=lead["id"])
    assert ticket["first_response_due_at"] == datetime(2026, 3, 29, 9, 0, tzinfo=JERUSALEM)
    assert ticket["first_response_due_at"] == datetime(2026, 3, 29, 6, 0, tzinfo=UTC)


def test_an_invalid_calendar_is_refused(owner):
    from tests.support.tickets_helpers import config_call

    response = config_call(owner, "PATCH", "ticket-settings", {"businessHours": {"mon": [["17:00", "09:00"]]}})
    assert (response.status, response.error_code) == (400, "INVALID_CALENDAR")
    policy = config_call(
        owner,
        "PATCH",
        "ticket-settings",
        {"slaPolicies": [{"priority": "low", "firstResponseMinutes": 600, "resolutionMinutes": 60}]},
    )
    assert (policy.status, policy.error_code) == (400, "INVALID_SLA_POLICY")


def test_settings_show_the_support_address_calendar_and_targets(owner):
    from tests.support.tickets_helpers import config_call

    settings = config_call(owner, "GET", "ticket-settings").data
    assert settings["supportAddress"].startswith("support+") and settings["supportAddress"].endswith(
        "@mail.leadcrm.local"
    )
    assert settings["timezone"] == "Europe/London"
    assert settings["holidays"] == [{"date": "2026-03-09", "name": "Staff day"}]
    assert {p["priority"]: p["firstResponseMinutes"] for p in settings["slaPolicies"]}["normal"] == 120
    rotated = config_call(owner, "PATCH", "ticket-settings", {"rotateSupportAddress": True}).data
    assert rotated["supportAddress"] != settings["supportAddress"]


def test_a_priority_sent_twice_takes_the_last_targets(owner):
    from tests.support.tickets_helpers import config_call

    response = config_call(
        owner,
        "PATCH",
        "ticket-settings",
        {
            "slaPolicies": [
                {"priority": "low", "firstResponseMinutes": 60, "resolutionMinutes": 600},
                {"priority": "low", "firstResponseMinutes": 90, "resolutionMinutes": 900},
            ]
        },
    )
    assert response.status == 200, response.body
    low = [p for p in response.data["slaPolicies"] if p["priority"] == "low"]
    assert low == [{"priority": "low", "firstResponseMinutes": 90, "resolutionMinutes": 900}]
