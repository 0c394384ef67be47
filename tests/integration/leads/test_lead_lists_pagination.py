"""GET /organizations/{orgId}/leads: sorts, orders and keyset pages that visit every row exactly once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import as_str, ids, insert_lead, make_board, place

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SORT_FIELDS = {"createdAt": "created_at", "updatedAt": "updated_at", "statusChangedAt": "status_changed_at"}


def _list(caller, **query):
    response = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query={k: str(v) for k, v in query.items()})
    assert response.status == 200, response.body
    return response


def _all_pages(caller, **query) -> tuple[list[str], int]:
    """Every lead id, page after page following nextCursor, and the number of pages."""
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        response = _list(caller, **query, **({"cursor": cursor} if cursor else {}))
        seen.extend(ids(response))
        pages += 1
        cursor = response.body["nextCursor"]
        if cursor is None:
            return seen, pages
        assert pages < 50, "pagination does not end"


@pytest.fixture
def caller():
    return make_caller()


@pytest.fixture
def board(caller):
    return make_board(caller.org_id, default=True)


def _leads_with_ties(board, field: str) -> list[tuple[datetime, str]]:
    """11 leads whose `field` takes 4 values, so most share their sort key with others (other timestamps
    run the opposite way, so a sort on the wrong column would show)."""
    made = []
    for i in range(11):
        key = T0 + timedelta(minutes=i % 4)
        other = T0 - timedelta(days=i)
        stamps = {"created_at": other, "updated_at": other, "status_changed_at": other, field: key}
        made.append((key, str(insert_lead(board, name=f"Lead {i}", **stamps))))
    return made


def _expected(made: list[tuple[datetime, str]], descending: bool) -> list[str]:
    # PostgreSQL compares uuids bytewise, which is the order of their canonical text.
    return [lead_id for _, lead_id in sorted(made, key=lambda pair: (pair[0], pair[1]), reverse=descending)]


@pytest.mark.parametrize("sort", list(SORT_FIELDS))
@pytest.mark.parametrize("order", ["desc", "asc"])
def test_pages_visit_every_lead_exactly_once_in_sort_order_even_with_ties(caller, board, sort, order):
    made = _leads_with_ties(board, SORT_FIELDS[sort])
    seen, pages = _all_pages(caller, sort=sort, order=order, limit=3)
    assert seen == _expected(made, descending=order == "desc")
    assert pages == 4


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_pages_of_one_lead_each_visit_every_lead_once_when_all_share_the_sort_key(caller, board, order):
    made = [str(insert_lead(board, name=f"Same {i}", created_at=T0)) for i in range(5)]
    seen, pages = _all_pages(caller, order=order, limit=1)
    assert seen == sorted(made, reverse=order == "desc")
    assert pages == 5


def test_the_default_sort_is_created_at_newest_first(caller, board):
    old = insert_lead(board, created_at=T0, updated_at=T0 + timedelta(days=9))
    new = insert_lead(board, created_at=T0 + timedelta(days=1), updated_at=T0)
    assert ids(_list(caller)) == as_str(new, old)


def test_order_asc_lists_oldest_first(caller, board):
    old = insert_lead(board, created_at=T0)
    new = insert_lead(board, created_at=T0 + timedelta(days=1))
    assert ids(_list(caller, order="asc")) == as_str(old, new)


def test_sort_updated_at_lists_the_most_recently_updated_first(caller, board):
    touched = insert_lead(board, created_at=T0, updated_at=T0 + timedelta(days=5))
    untouched = insert_lead(board, created_at=T0 + timedelta(days=1))
    assert ids(_list(caller, sort="updatedAt")) == as_str(touched, untouched)


def test_sort_status_changed_at_lists_the_latest_status_change_first(caller, board):
    moved = insert_lead(board, created_at=T0, status_changed_at=T0 + timedelta(days=5))
    still = insert_lead(board, created_at=T0 + timedelta(days=1))
    assert ids(_list(caller, sort="statusChangedAt")) == as_str(moved, still)


def test_pages_of_a_filtered_list_visit_every_match_once(caller, board):
    contacted = [str(insert_lead(board, category="contacted", created_at=T0 + timedelta(minutes=i))) for i in range(7)]
    for i in range(5):
        insert_lead(board, category="new", created_at=T0 + timedelta(minutes=i))
    seen, _ = _all_pages(caller, status="contacted", limit=2)
    assert seen == list(reversed(contacted))


def test_a_lead_created_after_the_first_page_does_not_shift_the_next_pages(caller, board):
    made = [str(insert_lead(board, created_at=T0 + timedelta(minutes=i))) for i in range(4)]
    first = _list(caller, limit=2)
    insert_lead(board, created_at=T0 + timedelta(days=1))  # newer than everything: belongs before page 1
    second = _list(caller, limit=2, cursor=first.body["nextCursor"])
    assert ids(first) + ids(second) == list(reversed(made))


def test_the_last_page_has_no_next_cursor(caller, board):
    for i in range(4):
        insert_lead(board, created_at=T0 + timedelta(minutes=i))
    first = _list(caller, limit=2)
    second = _list(caller, limit=2, cursor=first.body["nextCursor"])
    assert len(second.data) == 2
    assert second.body["nextCursor"] is None


@pytest.mark.parametrize(
    "reuse",
    [{"sort": "updatedAt"}, {"sort": "statusChangedAt"}, {"order": "asc"}, {"sort": "updatedAt", "order": "asc"}],
)
def test_a_cursor_reused_with_another_sort_or_order_is_a_400_invalid_cursor(caller, board, reuse):
    for i in range(3):
        insert_lead(board, created_at=T0 + timedelta(minutes=i))
    cursor = _list(caller, limit=1).body["nextCursor"]
    response = call_api(
        "GET", leads_path(caller.org_id), sub=caller.sub, query={"limit": "1", "cursor": cursor, **reuse}
    )
    assert (response.status, response.error_code) == (400, "INVALID_CURSOR")


def test_a_cursor_continues_with_the_sort_it_was_issued_for(caller, board):
    for i in range(3):
        insert_lead(board, created_at=T0 + timedelta(minutes=i), updated_at=T0 - timedelta(minutes=i))
    cursor = _list(caller, sort="updatedAt", order="asc", limit=1).body["nextCursor"]
    assert _list(caller, sort="updatedAt", order="asc", limit=1, cursor=cursor).status == 200


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_pages_of_a_pipeline_visit_its_primary_and_secondary_leads_once_in_order(caller, board, order):
    courses = make_board(caller.org_id, "Courses", ("new", "customer", "lost"))
    made = []
    for i in range(9):
        at = T0 + timedelta(minutes=i % 3)  # ties across both kinds of placement
        if i % 2:
            lead = insert_lead(courses, created_at=at)
        else:
            lead = insert_lead(board, created_at=at)
            place(courses, lead, "customer")
        made.append((at, str(lead)))
    insert_lead(board, created_at=T0)  # not in Courses
    seen, pages = _all_pages(caller, pipelineId=str(courses.pipeline_id), order=order, limit=2)
    assert seen == _expected(made, descending=order == "desc")
    assert pages == 5
