"""Round trips per route (issue 22): every main route sends at most its budget of SQL statements through
lambda_handler, the membership check and publishing after commit included (tests/support/round_trips.py)."""

from __future__ import annotations

import pytest

from leadcrm.platform.db.engine import get_engine
from tests.support.api import invoke, leads_path
from tests.support.database import count_statements
from tests.support.events import http_api_event
from tests.support.factories import StaffCaller, make_caller
from tests.support.round_trips import ROUTES, RouteBudget, route_event


def _new_lead(caller: StaffCaller) -> str:
    response = invoke(http_api_event("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Warm Lead"}))
    assert response.status == 201, response.body
    return response.body["data"]["id"]


@pytest.mark.usefixtures("event_bus")
@pytest.mark.parametrize("role", ["owner", "coach"])
@pytest.mark.parametrize("route", ROUTES, ids=[route.name for route in ROUTES])
def test_a_route_sends_no_more_statements_than_its_budget(route: RouteBudget, role: str):
    """Counted on the route's second call in an organization: the first does first-use work (the default
    pipeline). Called by its owner, the organization's leads are assigned to them and each gets its intake task
    (what a touch or a follow-up then closes or moves); called by a coach of an organization without an owner,
    they are not."""
    caller = make_caller(role=role)
    invoke(route_event(route, caller.org_id, caller.sub, _new_lead(caller)))
    event = route_event(route, caller.org_id, caller.sub, _new_lead(caller))
    with count_statements(get_engine()) as sent:
        response = invoke(event)
    assert response.status == route.status, response.body
    assert len(sent) <= route.budget, f"{route.name}: {len(sent)} statements, budget {route.budget}\n{sent.describe()}"


# What the assignment rules add to an intake in an organization that has some (issue 25): the locked rules,
# the named staff's state and the cursor update; the timeline entry rides in the lead's own INSERT. An
# organization without rules adds nothing (the budgets above).
RULE_PLACEMENT_STATEMENTS = 3


@pytest.mark.usefixtures("event_bus")
@pytest.mark.parametrize("route", [r for r in ROUTES if r.name in ("public capture", "staff create")], ids=str)
def test_an_intake_placed_by_a_rule_costs_three_statements_more(route: RouteBudget):
    owner = make_caller(role="owner")
    coach = make_caller(role="coach", organization=owner.organization)
    rule = {"name": "Coach", "strategy": "round_robin", "userIds": [str(owner.user.id), str(coach.user.id)]}
    created = invoke(
        http_api_event("POST", f"/organizations/{owner.org_id}/lead-assignment-rules", sub=owner.sub, body=rule)
    )
    assert created.status == 201, created.body
    invoke(route_event(route, owner.org_id, owner.sub, _new_lead(owner)))
    event = route_event(route, owner.org_id, owner.sub, _new_lead(owner))
    with count_statements(get_engine()) as sent:
        response = invoke(event)
    assert response.status == route.status, response.body
    budget = route.budget + RULE_PLACEMENT_STATEMENTS
    assert len(sent) <= budget, f"{route.name}: {len(sent)} statements, budget {budget}\n{sent.describe()}"
