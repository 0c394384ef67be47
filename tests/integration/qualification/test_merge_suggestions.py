"""GET …/leads/{leadId}/merge-suggestions: the same person by the identity rules (leads.rules.identity), oldest
first, with the suggested survivor (the oldest, or a converted lead, which is never merged away)."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from leadcrm.directory.tables import organizations
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import lead_row, make_converted, set_lead_columns
from tests.support.qualification_helpers import lead_path, new_lead


@pytest.fixture
def coach():
    caller = make_caller(role="coach")
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == caller.org_id).values(country_code="IL"))
    return caller


def _suggest(caller, lead_id):
    response = call_api("GET", lead_path(caller, lead_id, "/merge-suggestions"), sub=caller.sub)
    assert response.status == 200, response.body
    return response.data


def test_the_same_email_in_another_case_is_a_duplicate(coach):
    first = new_lead(coach, name="Dana Cohen", email="Dana@Example.com")
    second = new_lead(coach, name="D. Cohen", phone="050-1111111")
    # staff create dedups on email, so the copy arrives with another email and is corrected later
    set_lead_columns(second["id"], email="dana@example.com")

    suggestion = _suggest(coach, second["id"])

    assert [(d["leadId"], d["matchedBy"]) for d in suggestion["duplicates"]] == [(first["id"], "email")]
    assert suggestion["survivorId"] == first["id"]


def test_a_phone_typed_another_way_with_an_agreeing_name_is_a_duplicate(coach):
    first = new_lead(coach, name="Dana", phone="+972501234567")
    second = new_lead(coach, name="Dana Cohen")
    set_lead_columns(second["id"], phone="050-1234567")

    assert [d["matchedBy"] for d in _suggest(coach, second["id"])["duplicates"]] == ["phone"]
    assert _suggest(coach, first["id"])["duplicates"][0]["leadId"] == second["id"]


def test_the_same_phone_under_another_name_is_not_a_duplicate(coach):
    new_lead(coach, name="Avi Levi", phone="+972501234568")
    second = new_lead(coach, name="Noa Levi")
    set_lead_columns(second["id"], phone="0501234568")

    assert _suggest(coach, second["id"]) == {"survivorId": second["id"], "duplicates": []}


def test_a_converted_duplicate_is_the_suggested_survivor(coach):
    first = new_lead(coach, name="Dana", email="dana.conv@example.com")
    second = new_lead(coach, name="Dana")
    set_lead_columns(second["id"], email="dana.conv@example.com")
    make_converted(second["id"], lead_row(second["id"])["stage_id"])

    assert _suggest(coach, first["id"])["survivorId"] == second["id"]


def test_another_organizations_lead_is_not_found(coach):
    other = make_caller(role="coach")
    theirs = new_lead(other, name="Dana")
    response = call_api("GET", lead_path(coach, theirs["id"], "/merge-suggestions"), sub=coach.sub)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")
