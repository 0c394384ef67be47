"""Who may use the staff lead routes: gates read from the membership row on every request."""

from __future__ import annotations

import pytest

from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller, make_membership, make_organization, make_user

BODY = {"name": "Ada Lovelace"}


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Requests that do get through publish `lead.created`; the bus exists."""


def _create(org_id, sub):
    return call_api("POST", leads_path(org_id), sub=sub, body=BODY)


def test_a_member_who_is_not_staff_is_refused_with_403_staff_only():
    member = make_caller(role="member")
    response = _create(member.org_id, member.sub)
    assert response.status == 403
    assert response.error_code == "STAFF_ONLY"


def test_a_member_who_is_not_staff_may_not_list_leads_either():
    member = make_caller(role="member")
    response = call_api("GET", leads_path(member.org_id), sub=member.sub)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_a_user_of_another_organization_is_refused_with_403_not_a_member():
    outsider = make_caller(role="owner")
    other_org = make_organization()
    response = _create(other_org.id, outsider.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_an_organization_that_does_not_exist_answers_like_one_you_do_not_belong_to():
    caller = make_caller()
    response = _create("01890000-0000-7000-8000-000000000000", caller.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_a_subject_that_maps_to_no_user_is_refused_with_403_not_a_member():
    org = make_organization()
    response = _create(org.id, "user_nobody_knows")
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_an_organization_without_lead_management_is_refused_with_403_feature_disabled():
    caller = make_caller(role="owner", features={"lead_management": False})
    response = _create(caller.org_id, caller.sub)
    assert (response.status, response.error_code) == (403, "FEATURE_DISABLED")
    assert response.body["error"]["feature"] == "lead_management"


def test_an_organization_with_no_features_at_all_is_refused_with_403_feature_disabled():
    caller = make_caller(role="owner", features={})
    assert _create(caller.org_id, caller.sub).error_code == "FEATURE_DISABLED"


def test_features_stored_as_a_list_of_names_enable_lead_management():
    caller = make_caller(role="coach", features=["lead_management"])
    assert _create(caller.org_id, caller.sub).status == 201


@pytest.mark.parametrize("status", ["cancelled", "suspended", "pending_invitation"])
def test_a_membership_that_is_not_active_is_refused_with_403(status):
    caller = make_caller(role="owner", status=status)
    response = _create(caller.org_id, caller.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_a_soft_deleted_membership_is_refused_with_403():
    caller = make_caller(role="owner", deleted=True)
    response = _create(caller.org_id, caller.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_a_live_membership_after_a_soft_deleted_one_is_honoured():
    caller = make_caller(role="coach", deleted=True)
    make_membership(caller.organization, caller.user, role="coach")
    assert _create(caller.org_id, caller.sub).status == 201


def test_access_lost_after_a_token_was_issued_applies_at_once():
    from sqlalchemy import update

    from leadcrm.directory.tables import memberships
    from leadcrm.platform.db.engine import get_engine

    caller = make_caller(role="coach")
    assert _create(caller.org_id, caller.sub).status == 201
    with get_engine().begin() as conn:
        conn.execute(update(memberships).where(memberships.c.id == caller.membership.id).values(status="cancelled"))
    assert _create(caller.org_id, caller.sub).status == 403


def test_a_request_without_a_sub_claim_is_refused_with_401():
    caller = make_caller()
    response = _create(caller.org_id, None)
    assert (response.status, response.error_code) == (401, "UNAUTHENTICATED")


def test_a_request_without_any_authorizer_context_is_refused_with_401():
    caller = make_caller()
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=BODY, authorizer=False)
    assert (response.status, response.error_code) == (401, "UNAUTHENTICATED")


@pytest.mark.parametrize("org_id", ["not-a-uuid", "12345", "00000000-0000-0000-0000-00000000000g"])
def test_an_organization_id_that_is_not_a_uuid_is_refused_with_403(org_id):
    caller = make_caller()
    response = _create(org_id, caller.sub)
    assert response.status == 403
    assert response.error_code == "NOT_A_MEMBER"


def test_a_user_with_two_organizations_is_staff_only_where_their_membership_says_so():
    caller = make_caller(role="coach")
    elsewhere = make_organization()
    make_membership(elsewhere, caller.user, role="member")
    assert _create(caller.org_id, caller.sub).status == 201
    assert _create(elsewhere.id, caller.sub).error_code == "STAFF_ONLY"


def test_two_users_of_one_organization_are_resolved_separately():
    owner = make_caller(role="owner")
    member_user = make_user()
    make_membership(owner.organization, member_user, role="member")
    assert _create(owner.org_id, owner.sub).status == 201
    assert _create(owner.org_id, member_user.auth_subject).error_code == "STAFF_ONLY"
