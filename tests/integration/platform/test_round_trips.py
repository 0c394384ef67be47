"""Round trips per route (issue 22): every main route sends at most its budget of SQL statements through
lambda_handler, the membership check and publishing after commit included (tests/support/round_trips.py)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from leadcrm.platform.db.engine import get_engine
from tests.support.api import invoke, leads_path
from tests.support.database import count_statements
from tests.support.events import http_api_event
from tests.support.factories import StaffCaller, make_caller
from tests.support.round_trips import ROUTES, RouteBudget


def _fill(value: Any, values: dict[str, str]) -> Any:
    if value is None:
        return None
    text = json.dumps(value)
    for key, replacement in values.items():
        text = text.replace("{" + key + "}", replacement)
    return json.loads(text)


def _event(route: RouteBudget, caller: StaffCaller, lead_id: str) -> dict[str, Any]:
    values = {"orgId": str(caller.org_id), "leadId": lead_id, "unique": uuid.uuid4().hex[:12]}
    path = _fill(route.path, values)
    if not route.public:
        path = f"/organizations/{caller.org_id}{path}"
    body = _fill(route.body, values)
    if route.public:
        return http_api_event(route.method, path, sub=None, body=body, query=route.query, authorizer=False)
    return http_api_event(route.method, path, sub=caller.sub, body=body, query=route.query)


def _new_lead(caller: StaffCaller) -> str:
    response = invoke(http_api_event("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Warm Lead"}))
    assert response.status == 201, response.body
    return response.body["data"]["id"]


@pytest.mark.usefixtures("event_bus")
@pytest.mark.parametrize("route", ROUTES, ids=[route.name for route in ROUTES])
def test_a_route_sends_no_more_statements_than_its_budget(route: RouteBudget):
    """Counted on the route's second call in an organization: the first does first-use work (the default
    pipeline)."""
    caller = make_caller()
    invoke(_event(route, caller, _new_lead(caller)))
    event = _event(route, caller, _new_lead(caller))
    with count_statements(get_engine()) as sent:
        response = invoke(event)
    assert response.status == route.status, response.body
    assert len(sent) <= route.budget, f"{route.name}: {len(sent)} statements, budget {route.budget}\n{sent.describe()}"
