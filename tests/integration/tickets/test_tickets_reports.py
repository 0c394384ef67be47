"""The SLA report: first response and resolution times and breach rate, in total, per queue and per agent,
for tickets created in the period, from one set-based statement."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from leadcrm.tickets import staff_actions
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead
from tests.support.tickets_helpers import actor_of, config_call, configure, in_uow, new_ticket, set_timezone

LONDON = ZoneInfo("Europe/London")
MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=LONDON)
PERIOD = {"from": "2026-03-01", "to": "2026-03-31"}


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes after commit; the bus exists."""


@pytest.fixture
def owner():
    owner = make_caller(role="owner")
    set_timezone(owner.org_id, "Europe/London")
    configure(
        owner.org_id,
        business_hours={d: [["09:00", "17:00"]] for d in ("mon", "tue", "wed", "thu", "fri")},
        sla_policies=[("normal", 60, 480)],
    )
    return owner


def _worked(owner, lead, agent, queue_id, *, respond_after: float, resolve_after: float | None = None):
    ticket = new_ticket(owner.org_id, MONDAY, lead_id=lead["id"])
    actor = actor_of(owner)
    in_uow(staff_actions.assign, actor, ticket["id"], assignee_user_id=agent.user.id, queue_id=queue_id, now=MONDAY)
    in_uow(staff_actions.respond, actor, ticket["id"], now=MONDAY + timedelta(hours=respond_after))
    if resolve_after is not None:
        in_uow(staff_actions.resolve, actor, ticket["id"], resolution="x", now=MONDAY + timedelta(hours=resolve_after))
    return ticket


def test_times_and_breach_rates_per_queue_and_agent(owner):
    lead = create_lead(owner)
    ann = make_caller(role="coach", organization=owner.organization)
    ben = make_caller(role="coach", organization=owner.organization)
    billing = config_call(owner, "POST", "ticket-queues", {"name": "Billing"}).data["id"]
    general = config_call(owner, "POST", "ticket-queues", {"name": "General"}).data["id"]
    _worked(owner, lead, ann, billing, respond_after=0.5, resolve_after=2)  # in time
    _worked(owner, lead, ann, billing, respond_after=2, resolve_after=4)  # first response breached (60 min)
    _worked(owner, lead, ben, general, respond_after=0.25)  # in time, open
    new_ticket(owner.org_id, MONDAY - timedelta(days=30), lead_id=lead["id"])  # before the period: left out

    report = config_call(owner, "GET", "ticket-reports/sla", query=PERIOD)
    assert report.status == 200, report.body
    totals = report.data["totals"]
    assert (totals["tickets"], totals["responded"], totals["resolved"], totals["breached"]) == (3, 3, 2, 1)
    assert totals["breachRate"] == pytest.approx(1 / 3, abs=1e-4)
    assert totals["firstResponseAvgSeconds"] == (1800 + 7200 + 900) // 3
    queues = {q["queueId"]: q for q in report.data["byQueue"]}
    assert (queues[billing]["tickets"], queues[billing]["breachRate"]) == (2, 0.5)
    assert queues[billing]["resolutionAvgSeconds"] == (2 * 3600 + 4 * 3600) // 2
    assert (queues[general]["tickets"], queues[general]["breached"], queues[general]["resolved"]) == (1, 0, 0)
    agents = {a["assigneeUserId"]: a for a in report.data["byAgent"]}
    assert (agents[str(ann.user.id)]["tickets"], agents[str(ann.user.id)]["firstResponseBreached"]) == (2, 1)
    assert agents[str(ben.user.id)]["firstResponseMedianSeconds"] == 900


def test_the_report_is_one_statement_however_many_queues_and_agents(owner):
    lead = create_lead(owner)
    for n in range(3):
        agent = make_caller(role="coach", organization=owner.organization)
        queue = config_call(owner, "POST", "ticket-queues", {"name": f"Q{n}"}).data["id"]
        _worked(owner, lead, agent, queue, respond_after=0.5)
    from leadcrm.platform.db.engine import get_engine
    from leadcrm.tickets.reports import sla_report

    with get_engine().connect() as conn, count_statements(get_engine()) as statements:
        report = sla_report(conn, owner.org_id, MONDAY - timedelta(days=1), MONDAY + timedelta(days=1))
    assert len(report["by_queue"]) == 3 and len(report["by_agent"]) == 3
    assert len(statements) == 1


def test_an_empty_period_reports_zeroes_and_a_bad_period_is_a_400(owner):
    empty = config_call(owner, "GET", "ticket-reports/sla", query=PERIOD)
    assert (empty.data["totals"]["tickets"], empty.data["totals"]["breachRate"], empty.data["byQueue"]) == (0, 0.0, [])
    backwards = config_call(owner, "GET", "ticket-reports/sla", query={"from": PERIOD["to"], "to": PERIOD["from"]})
    assert (backwards.status, backwards.error_code) == (400, "INVALID_PERIOD")
    member = make_caller(role="member", organization=owner.organization)
    assert config_call(member, "GET", "ticket-reports/sla").status == 403


def test_the_period_is_local_days_of_the_organization_both_included(owner):
    report = config_call(owner, "GET", "ticket-reports/sla", query=PERIOD)
    # London: March 2026 starts in GMT and ends in BST (29 March), so the last day ends at 23:00 UTC.
    assert report.data["period"] == {
        "from": "2026-03-01",
        "to": "2026-03-31",
        "timezone": "Europe/London",
        "startsAt": "2026-03-01T00:00:00Z",
        "endsAt": "2026-03-31T23:00:00Z",
    }


def test_without_a_period_the_report_covers_the_30_days_up_to_today(owner):
    period = config_call(owner, "GET", "ticket-reports/sla").data["period"]
    first, last = date.fromisoformat(period["from"]), date.fromisoformat(period["to"])
    assert (last - first).days == 29


def test_a_period_is_days_not_instants_and_at_most_366_of_them(owner):
    instant = config_call(owner, "GET", "ticket-reports/sla", query={"from": "2026-03-01T00:00:00Z"})
    assert (instant.status, instant.error_code) == (400, "VALIDATION_FAILED")
    too_long = config_call(owner, "GET", "ticket-reports/sla", query={"from": "2025-01-01", "to": "2026-01-02"})
    assert (too_long.status, too_long.error_code) == (400, "INVALID_PERIOD")
