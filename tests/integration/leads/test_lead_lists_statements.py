"""A list page costs the same statements whatever its size: the rows' tags come in the page's own statement.

Run with `-s` to see the statements.
"""

from __future__ import annotations

import pytest

from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import insert_lead, make_board, make_tag, place, tag

# the caller's membership and the page with its tags, in one statement (leadcrm.directory.member_reads)
LIST_PAGE_STATEMENTS = 1


@pytest.fixture(scope="module")
def busy_organization():
    """100+ leads, each with tags and some with a secondary placement."""
    caller = make_caller()
    board = make_board(caller.org_id, default=True)
    courses = make_board(caller.org_id, "Courses", ("new", "customer", "lost"))
    tags = [make_tag(caller.org_id, f"Tag {i}") for i in range(3)]
    for i in range(105):
        lead = insert_lead(board, name=f"Lead {i}", assigned_to=caller.user.id)
        tag(caller.org_id, lead, *tags[: 1 + i % 3])
        if i % 4 == 0:
            place(courses, lead, "customer")
    return caller, board, courses, tags


def _count(caller, query: dict[str, str]) -> tuple[int, int, str]:
    with count_statements(get_engine()) as log:
        response = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query=query)
    assert response.status == 200, response.body
    return len(log), len(response.data), log.describe()


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"status": "new"},
        {"assignee": "me", "sort": "updatedAt"},
        {"search": "lead"},
        {"archived": "all", "order": "asc"},
    ],
    ids=lambda f: ",".join(f) or "no filter",
)
def test_pages_of_1_and_100_leads_cost_the_same_statements(busy_organization, filters):
    caller, *_ = busy_organization
    small, small_rows, _ = _count(caller, {**filters, "limit": "1"})
    large, large_rows, statements = _count(caller, {**filters, "limit": "100"})
    print(f"\n[sql] list page of 100 with {filters or 'no filter'}: {large} statements\n{statements}")
    assert (small_rows, large_rows) == (1, 100)
    assert small == large == LIST_PAGE_STATEMENTS


def test_pipeline_and_tag_filters_cost_no_more_statements(busy_organization):
    caller, board, courses, tags = busy_organization
    query = {"pipelineId": str(courses.pipeline_id), "stageIds": str(courses.stages["customer"])}
    assert _count(caller, {**query, "limit": "1"})[0] == LIST_PAGE_STATEMENTS
    assert _count(caller, {"tags": ",".join(map(str, tags)), "limit": "100"})[0] == LIST_PAGE_STATEMENTS


def test_following_a_cursor_costs_no_more_statements(busy_organization):
    caller, *_ = busy_organization
    first = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query={"limit": "100"})
    count, rows, _ = _count(caller, {"limit": "100", "cursor": first.body["nextCursor"]})
    assert rows == 5
    assert count == LIST_PAGE_STATEMENTS
