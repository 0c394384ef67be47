"""The number of SQL statements a request costs is part of its contract: it must not grow unnoticed.

Run with `-s` to see the figures and the statements.
"""

from __future__ import annotations

import pytest

from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.database import count_statements
from tests.support.factories import make_caller

MAX_STATEMENTS_STAFF_CREATE = 8
MAX_STATEMENTS_GET_LEAD = 3
MAX_STATEMENTS_LIST_PAGE = 3


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating a lead publishes after commit (one more statement stamps the outbox row); the bus exists."""


def _create(caller, name="Ada Lovelace"):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": name})
    assert response.status == 201, response.body
    return response.data


def test_a_staff_create_costs_at_most_8_statements_once_the_pipeline_exists():
    caller = make_caller()
    _create(caller, "seeds the default pipeline")
    with count_statements(get_engine()) as log:
        _create(caller)
    print(f"\n[sql] staff create (pipeline already seeded): {len(log)} statements\n{log.describe()}")
    assert len(log) <= MAX_STATEMENTS_STAFF_CREATE


def test_a_staff_create_with_an_idempotency_key_costs_at_most_two_more_statements():
    caller = make_caller()
    _create(caller, "seeds the default pipeline")
    with count_statements(get_engine()) as log:
        response = call_api(
            "POST",
            leads_path(caller.org_id),
            sub=caller.sub,
            body={"name": "Ada"},
            headers={"idempotency-key": "count-me"},
        )
    assert response.status == 201
    print(f"\n[sql] staff create with Idempotency-Key: {len(log)} statements\n{log.describe()}")
    assert len(log) <= MAX_STATEMENTS_STAFF_CREATE + 2


def test_reading_one_lead_costs_at_most_3_statements():
    caller = make_caller()
    lead = _create(caller)
    with count_statements(get_engine()) as log:
        response = call_api("GET", leads_path(caller.org_id, lead["id"]), sub=caller.sub)
    assert response.status == 200
    print(f"\n[sql] GET lead: {len(log)} statements\n{log.describe()}")
    assert len(log) <= MAX_STATEMENTS_GET_LEAD


@pytest.mark.parametrize("page_size", [1, 20])
def test_a_list_page_costs_the_same_few_statements_whatever_its_size(page_size):
    caller = make_caller()
    for i in range(20):
        _create(caller, f"Lead {i}")
    with count_statements(get_engine()) as log:
        response = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query={"limit": str(page_size)})
    assert response.status == 200
    assert len(response.data) == page_size
    print(f"\n[sql] list page of {page_size}: {len(log)} statements")
    assert len(log) <= MAX_STATEMENTS_LIST_PAGE
