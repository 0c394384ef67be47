"""GET …/leads/{leadId}/link-candidates and GET …/sales-workspace/leads/{leadId}/link-candidates (staff):
members who share the lead's email or phone before anyone types (spec "Link candidates are offered before
staff type anything"), or the roster search (spec "Staff can search the roster to link by hand")."""

from __future__ import annotations

import uuid

import pytest

from tests.support.conversion_helpers import (
    candidates,
    insert_lead,
    make_person,
    set_country,
    unique_email,
)
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import set_lead_columns


@pytest.fixture
def coach():
    caller = make_caller(role="coach")
    set_country(caller.org_id, "IL")
    return caller


def _ids(response) -> list[tuple[str, str]]:
    assert response.status == 200, response.body
    return [(c["membershipId"], c["matchedBy"]) for c in response.data["candidates"]]


# -- before anyone types -----------------------------------------------------------------------------------


def test_a_member_with_the_leads_email_is_a_candidate_with_the_full_shape(coach):
    email = unique_email("dana")
    member = make_person(coach.org_id, first_name="Dana", last_name="Cohen", email=email, phone="+972501234567")
    lead = insert_lead(coach.org_id, name="Dana", email=email.upper())
    response = candidates(coach, lead)
    assert response.status == 200
    assert response.body == {
        "data": {
            "candidates": [
                {
                    "membershipId": str(member.membership_id),
                    "userId": str(member.user_id),
                    "firstName": "Dana",
                    "lastName": "Cohen",
                    "email": email,
                    "phone": "+972501234567",
                    "matchedBy": "email",
                }
            ]
        }
    }


def test_a_hand_typed_lead_phone_finds_the_member_in_e164(coach):
    member = make_person(coach.org_id, first_name="Dana", phone="+972501234567")
    lead = insert_lead(coach.org_id, phone="050-1234567")
    assert _ids(candidates(coach, lead)) == [(str(member.membership_id), "phone")]


def test_a_lead_phone_in_e164_finds_a_hand_typed_member_phone(coach):
    member = make_person(coach.org_id, first_name="Dana", phone="050 123 4567")
    lead = insert_lead(coach.org_id, phone="+972 50-123-4567")
    assert _ids(candidates(coach, lead)) == [(str(member.membership_id), "phone")]


def test_the_organizations_country_reads_numbers_without_a_country_code():
    caller = make_caller(role="coach")
    set_country(caller.org_id, "US")
    member = make_person(caller.org_id, first_name="Sam", phone="+1 202 555 0123")
    lead = insert_lead(caller.org_id, phone="(202) 555-0123")
    assert _ids(candidates(caller, lead)) == [(str(member.membership_id), "phone")]


def test_the_same_last_seven_digits_of_another_number_is_not_a_match(coach):
    # Both share the last seven digits 1234567 with the lead's +972 50-123-4567: the prefilter finds them,
    # the exact E.164 comparison drops them.
    make_person(coach.org_id, first_name="London", phone="+44 20 7123 4567")
    make_person(coach.org_id, first_name="Near", phone="+972 52 123 4567")
    lead = insert_lead(coach.org_id, phone="050-1234567")
    assert _ids(candidates(coach, lead)) == []


def test_email_matches_come_first_and_a_member_matching_both_is_listed_once(coach):
    email = unique_email("both")
    by_phone = make_person(coach.org_id, first_name="Yossi", phone="+972501234567")
    by_both = make_person(coach.org_id, first_name="Dana", email=email, phone="+972501234567")
    lead = insert_lead(coach.org_id, name="Dana", email=email, phone="0501234567")
    assert _ids(candidates(coach, lead)) == [
        (str(by_both.membership_id), "email"),
        (str(by_phone.membership_id), "phone"),
    ]


def test_a_shared_family_number_lists_every_member_on_it(coach):
    parent = make_person(coach.org_id, first_name="Dana", phone="+972501234567")
    spouse = make_person(coach.org_id, first_name="Yossi", phone="0501234567")
    lead = insert_lead(coach.org_id, name="Noa", phone="050-123-4567")
    assert _ids(candidates(coach, lead)) == [
        (str(parent.membership_id), "phone"),
        (str(spouse.membership_id), "phone"),
    ]


@pytest.mark.parametrize(
    "who",
    [
        {"status": "cancelled"},
        {"status": "pending_invitation"},
        {"deleted": True},
        {"kind": "managed"},
    ],
    ids=["cancelled", "pending", "soft-deleted", "managed"],
)
def test_only_active_account_members_are_candidates(coach, who):
    email = unique_email("x")
    make_person(coach.org_id, first_name="Dana", email=email, phone="+972501234567", **who)
    lead = insert_lead(coach.org_id, email=email, phone="0501234567")
    assert _ids(candidates(coach, lead)) == []


def test_members_of_other_organizations_are_not_candidates(coach):
    email = unique_email("elsewhere")
    make_person(make_caller(role="admin").org_id, email=email, phone="+972501234567")
    lead = insert_lead(coach.org_id, email=email, phone="0501234567")
    assert _ids(candidates(coach, lead)) == []


def test_a_lead_without_email_or_phone_has_no_candidates(coach):
    make_person(coach.org_id, first_name="Dana")
    lead = insert_lead(coach.org_id, name="Dana")
    assert _ids(candidates(coach, lead)) == []


def test_a_converted_lead_gets_an_empty_list(coach):
    email = unique_email("done")
    member = make_person(coach.org_id, email=email)
    lead = insert_lead(coach.org_id, email=email)
    set_lead_columns(lead, converted_membership_id=member.membership_id)
    assert _ids(candidates(coach, lead)) == []
    assert _ids(candidates(coach, lead, "Test")) == []


# -- the Sales workspace route -----------------------------------------------------------------------------


def test_the_sales_workspace_route_answers_the_same_shape(coach):
    email = unique_email("ws")
    make_person(coach.org_id, first_name="Dana", email=email)
    lead = insert_lead(coach.org_id, email=email)
    leads_route = candidates(coach, lead)
    workspace = candidates(coach, lead, workspace=True)
    assert workspace.status == 200
    assert workspace.body == leads_route.body
    assert set(workspace.body["data"]) == {"candidates"}


def test_the_sales_workspace_route_searches_too(coach):
    member = make_person(coach.org_id, first_name="Dmitry", last_name="Workspace")
    lead = insert_lead(coach.org_id, name="Dima")
    assert _ids(candidates(coach, lead, "dmitry workspace", workspace=True)) == [(str(member.membership_id), "search")]


# -- searching the roster ----------------------------------------------------------------------------------


def test_search_finds_a_member_no_rule_can_see_by_name(coach):
    member = make_person(coach.org_id, first_name="Dmitry", last_name="Petrov")
    make_person(coach.org_id, first_name="Dana", last_name="Cohen")
    lead = insert_lead(coach.org_id, name="Dima")
    assert _ids(candidates(coach, lead, "dmit")) == [(str(member.membership_id), "search")]


def test_every_search_term_must_hit_some_field(coach):
    dmitry_petrov = make_person(coach.org_id, first_name="Dmitry", last_name="Petrov")
    make_person(coach.org_id, first_name="Dmitry", last_name="Ivanov")
    lead = insert_lead(coach.org_id, name="Dima")
    assert _ids(candidates(coach, lead, "Dmitry PETROV")) == [(str(dmitry_petrov.membership_id), "search")]


def test_search_matches_the_email(coach):
    email = unique_email("dp.mail")
    member = make_person(coach.org_id, first_name="D", email=email)
    lead = insert_lead(coach.org_id, name="Dima")
    assert _ids(candidates(coach, lead, email.split("@")[0])) == [(str(member.membership_id), "search")]


def test_a_search_with_digits_finds_the_phone_with_the_trunk_zero_dropped(coach):
    member = make_person(coach.org_id, first_name="Dmitry", phone="+972501112233")
    make_person(coach.org_id, first_name="Other", phone="+972509998877")
    lead = insert_lead(coach.org_id, name="Dima")
    assert _ids(candidates(coach, lead, "050-111-2233")) == [(str(member.membership_id), "search")]
    assert _ids(candidates(coach, lead, "1112")) == [(str(member.membership_id), "search")]


def test_search_characters_are_not_patterns(coach):
    make_person(coach.org_id, first_name="Dmitry")
    lead = insert_lead(coach.org_id, name="Dima")
    assert _ids(candidates(coach, lead, "%%")) == []
    assert _ids(candidates(coach, lead, "__")) == []


def test_search_returns_at_most_20_members(coach):
    for n in range(22):
        make_person(coach.org_id, first_name=f"Roster{n:02d}", last_name="Crowd")
    lead = insert_lead(coach.org_id, name="Someone")
    found = _ids(candidates(coach, lead, "crowd"))
    assert len(found) == 20
    assert {matched for _, matched in found} == {"search"}


def test_search_skips_members_who_are_not_active_or_managed(coach):
    make_person(coach.org_id, first_name="Zed", last_name="Cancelled", status="cancelled")
    make_person(coach.org_id, first_name="Zed", last_name="Managed", kind="managed")
    make_person(coach.org_id, first_name="Zed", last_name="Deleted", deleted=True)
    active = make_person(coach.org_id, first_name="Zed", last_name="Active")
    lead = insert_lead(coach.org_id, name="Z")
    assert _ids(candidates(coach, lead, "zed")) == [(str(active.membership_id), "search")]


@pytest.mark.parametrize("search", ["a", "x" * 101])
def test_a_search_shorter_than_2_or_longer_than_100_characters_is_refused(coach, search):
    lead = insert_lead(coach.org_id, name="Dima")
    response = candidates(coach, lead, search)
    assert response.status == 400


# -- gates -------------------------------------------------------------------------------------------------


def test_an_admin_reads_candidates_too():
    admin = make_caller(role="admin")
    lead = insert_lead(admin.org_id, name="Dima")
    assert candidates(admin, lead).status == 200


def test_a_member_may_not_read_candidates(coach):
    member = make_caller(role="member", organization=coach.organization)
    lead = insert_lead(coach.org_id, name="Dima")
    for workspace in (False, True):
        response = candidates(member, lead, workspace=workspace)
        assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_another_organizations_lead_answers_404_like_a_random_id(coach):
    foreign = insert_lead(make_caller(role="admin").org_id, name="Foreign")
    for lead_id in (foreign, uuid.uuid4(), "nope"):
        for workspace in (False, True):
            response = candidates(coach, lead_id, workspace=workspace)
            assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")
