"""Phones read the same whichever way they were typed, on PostgreSQL: lead search and dedup are symmetric in
the organization's phone region (its country set through the settings route, else its timezone's)."""

from __future__ import annotations

import pytest

from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import capture, lead_rows, receipts_of
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import as_str, ids, insert_lead, make_board

NATIONAL, INTERNATIONAL, DIALLED = "050-123-4567", "+972501234567", "00972 50 123 4567"


def _settings(caller, body):
    response = call_api("PATCH", f"/organizations/{caller.org_id}/settings", sub=caller.sub, body=body)
    assert response.status == 200, response.body


def _create(caller, phone):
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Noa Levi", "phone": phone})


def _search(caller, term) -> set[str]:
    response = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query={"search": term})
    assert response.status == 200, response.body
    return set(ids(response))


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.mark.parametrize(
    ("first", "second"), [(NATIONAL, INTERNATIONAL), (INTERNATIONAL, NATIONAL), (DIALLED, NATIONAL)]
)
def test_with_the_country_set_in_settings_two_spellings_are_one_lead(owner, first, second):
    _settings(owner, {"country": "IL"})
    created = _create(owner, first)
    duplicate = _create(owner, second)
    assert (duplicate.status, duplicate.error_code) == (409, "DUPLICATE_LEAD")
    assert duplicate.body["error"]["existingLeadId"] == created.data["id"]


def test_without_a_country_the_timezones_country_reads_national_numbers(owner):
    _settings(owner, {"timezone": "Asia/Jerusalem"})
    created = _create(owner, NATIONAL)
    duplicate = _create(owner, INTERNATIONAL)
    assert duplicate.body["error"]["existingLeadId"] == created.data["id"]


def test_in_a_timezone_of_no_country_a_national_number_is_not_matched_with_an_international_one(owner):
    # UTC names no country: "050…" could be anyone's number, so it stays a lead of its own.
    _create(owner, NATIONAL)
    assert _create(owner, INTERNATIONAL).status == 201


def test_the_country_wins_over_the_timezone(owner):
    _settings(owner, {"timezone": "Asia/Jerusalem", "country": "GB"})
    _create(owner, "07700 900123")
    assert _create(owner, "+44 7700 900123").status == 409
    _create(owner, NATIONAL)
    assert _create(owner, INTERNATIONAL).status == 201  # read in Britain, 050… is not Israeli


@pytest.mark.parametrize(
    ("stored", "term"),
    [
        (NATIONAL, INTERNATIONAL),
        (INTERNATIONAL, NATIONAL),
        (NATIONAL, "00972501234567"),
        ("0501234567", "+972 50 123 4567"),
        (NATIONAL, "972501234567"),
    ],
)
def test_search_finds_the_lead_whichever_spelling_is_stored_and_typed(owner, stored, term):
    _settings(owner, {"country": "IL"})
    board = make_board(owner.org_id, "Sales", default=True)
    noa = insert_lead(board, name="Noa", phone=stored)
    insert_lead(board, name="Other", phone="052-999-8888")
    assert _search(owner, term) == set(as_str(noa))


def test_search_by_an_international_number_finds_a_national_one_even_without_a_region(owner):
    board = make_board(owner.org_id, "Sales", default=True)
    noa = insert_lead(board, name="Noa", phone=NATIONAL)
    assert _search(owner, INTERNATIONAL) == set(as_str(noa))


def test_public_capture_of_two_spellings_keeps_one_lead(owner):
    _settings(owner, {"country": "IL"})
    for phone in (NATIONAL, INTERNATIONAL):
        assert capture(owner.org_id, {"name": "Noa", "phone": phone}).status == 201
    assert [lead["phone"] for lead in lead_rows(owner.org_id)] == [NATIONAL]
    assert sorted(r["duplicate"] for r in receipts_of(owner.org_id)) == [False, True]
