"""What the deal routes cost in SQL statements: a page of deals or a forecast does not grow with its size.

Run with `-s` to see the figures and the statements.
"""

from __future__ import annotations

import pytest

from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.database import count_statements
from tests.support.deals_helpers import EVIDENCE, deals_path, ok, open_deal, stage_id
from tests.support.factories import make_caller

# The caller's membership, then the page (one query with the stage joined).
MAX_STATEMENTS_LIST_PAGE = 2
# The caller, the organization's timezone, the rollup.
MAX_STATEMENTS_FORECAST = 3
# The caller, the deal, its history, its compensations.
MAX_STATEMENTS_GET_DEAL = 4
# The caller, lock, pipeline, stages, update, history, timeline (savepoint, insert, release), the answer,
# outbox, and the outbox stamp after publishing.
MAX_STATEMENTS_MOVE = 12


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Deal writes publish after commit; the bus exists."""


@pytest.fixture
def coach():
    return make_caller(role="coach")


@pytest.mark.parametrize("deals", [2, 12])
def test_a_page_of_deals_costs_the_same_whatever_its_size(coach, deals):
    for _ in range(deals):
        open_deal(coach)
    with count_statements(get_engine()) as log:
        page = call_api("GET", deals_path(coach.org_id), sub=coach.sub, query={"limit": "50"})
    assert len(page.data) == deals
    print(f"\n[sql] deals page of {deals}: {len(log)} statements\n{log.describe()}")
    assert len(log) <= MAX_STATEMENTS_LIST_PAGE


def test_the_forecast_is_one_rollup_statement(coach):
    for _ in range(5):
        open_deal(coach)
    with count_statements(get_engine()) as log:
        assert call_api("GET", f"{deals_path(coach.org_id)}/forecast", sub=coach.sub).status == 200
    print(f"\n[sql] forecast: {len(log)} statements\n{log.describe()}")
    assert len(log) <= MAX_STATEMENTS_FORECAST


def test_reading_a_deal_costs_at_most_4_statements(coach):
    deal = open_deal(coach)
    with count_statements(get_engine()) as log:
        assert call_api("GET", deals_path(coach.org_id, deal["id"]), sub=coach.sub).status == 200
    print(f"\n[sql] deal detail: {len(log)} statements\n{log.describe()}")
    assert len(log) <= MAX_STATEMENTS_GET_DEAL


def test_a_move_costs_a_bounded_number_of_statements(coach):
    deal = open_deal(coach)
    body = {"version": deal["version"], "stageId": stage_id(coach, "discovery"), **EVIDENCE["discovery"]}
    with count_statements(get_engine()) as log:
        ok(call_api("POST", f"{deals_path(coach.org_id, deal['id'])}/move", sub=coach.sub, body=body))
    print(f"\n[sql] move: {len(log)} statements\n{log.describe()}")
    assert len(log) <= MAX_STATEMENTS_MOVE
