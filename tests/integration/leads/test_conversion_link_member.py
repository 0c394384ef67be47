"""POST /organizations/{orgId}/leads/{leadId}/link-member {membershipId} (owner/admin): the repair path that
links a lead to an existing active member (spec "Convert onto an existing member links, never duplicates")."""

from __future__ import annotations

import uuid

import pytest

from tests.support.conversion_helpers import insert_lead, link_member, make_person, outbox_of_type
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import (
    activities,
    default_pipeline,
    lead_row,
    make_pipeline,
    outbox_events,
    set_lead_columns,
    status_events,
)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Linking publishes lead.status_changed after commit; the bus exists."""


@pytest.fixture
def admin():
    return make_caller(role="admin")


@pytest.fixture
def lead(admin):
    return insert_lead(admin.org_id, name="Dima")


@pytest.fixture
def member(admin):
    return make_person(admin.org_id, first_name="Dmitry", last_name="Petrov")


def test_link_answers_attached_with_the_membership(admin, lead, member):
    response = link_member(admin, lead, member.membership_id)
    assert response.status == 200, response.body
    assert response.body == {"data": {"outcome": "attached", "membershipId": str(member.membership_id)}}


def test_link_sets_converted_membership_id_and_the_converted_stage(admin, lead, member):
    sales = default_pipeline(admin.org_id)
    link_member(admin, lead, member.membership_id)
    row = lead_row(lead)
    assert (row["converted_membership_id"], row["stage_id"], row["status"]) == (
        member.membership_id,
        sales.stage("converted"),
        "converted",
    )


def test_link_records_the_staff_actor_and_emits_lead_status_changed(admin, lead, member):
    link_member(admin, lead, member.membership_id)
    (event,) = status_events(lead)
    assert (event["to_status"], event["actor_user_id"]) == ("converted", admin.user.id)
    (changed,) = outbox_events(lead)
    assert changed["payload"]["actorUserId"] == str(admin.user.id)
    (entry,) = activities(lead, "member_linked")
    assert entry["payload"] == {"membershipId": str(member.membership_id), "via": "link"}


def test_link_emits_no_membership_activated(admin, lead, member):
    link_member(admin, lead, member.membership_id)
    assert outbox_of_type(admin.org_id, "membership.activated") == []


def test_link_lands_on_the_customer_stage_when_the_pipeline_has_no_converted_one(admin, member):
    course = make_pipeline(admin.org_id, ["new", "customer", "lost"])
    lead_id = insert_lead(admin.org_id, name="Dima")
    set_lead_columns(lead_id, pipeline_id=course.id, stage_id=course.stage("new"))
    link_member(admin, lead_id, member.membership_id)
    assert (lead_row(lead_id)["stage_id"], lead_row(lead_id)["status"]) == (course.stage("customer"), "customer")


def test_a_converted_lead_cannot_be_linked_again(admin, lead, member):
    link_member(admin, lead, member.membership_id)
    other = make_person(admin.org_id, first_name="Other")
    response = link_member(admin, lead, other.membership_id)
    assert (response.status, response.error_code) == (400, "LEAD_ALREADY_CONVERTED")
    assert lead_row(lead)["converted_membership_id"] == member.membership_id


@pytest.mark.parametrize("status", ["pending_invitation", "cancelled", "suspended"])
def test_a_membership_that_is_not_active_is_refused(admin, lead, status):
    inactive = make_person(admin.org_id, status=status)
    response = link_member(admin, lead, inactive.membership_id)
    assert response.status == 400
    assert response.body["error"] == {"code": "MEMBER_NOT_ACTIVE", "message": "Member is not active"}
    assert lead_row(lead)["converted_membership_id"] is None


def test_a_soft_deleted_membership_is_not_found(admin, lead):
    gone = make_person(admin.org_id, deleted=True)
    response = link_member(admin, lead, gone.membership_id)
    assert (response.status, response.error_code) == (404, "MEMBERSHIP_NOT_FOUND")


def test_another_organizations_membership_answers_like_a_random_id(admin, lead):
    foreign = make_person(make_caller(role="admin").org_id)
    for membership_id in (foreign.membership_id, uuid.uuid4()):
        response = link_member(admin, lead, membership_id)
        assert (response.status, response.error_code) == (404, "MEMBERSHIP_NOT_FOUND")
    assert lead_row(lead)["converted_membership_id"] is None


def test_another_organizations_lead_answers_404(admin, member):
    foreign_lead = insert_lead(make_caller(role="admin").org_id, name="Foreign")
    for lead_id in (foreign_lead, uuid.uuid4()):
        response = link_member(admin, lead_id, member.membership_id)
        assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_a_coach_may_not_link(admin, lead, member):
    coach = make_caller(role="coach", organization=admin.organization)
    response = link_member(coach, lead, member.membership_id)
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")
    assert lead_row(lead)["converted_membership_id"] is None


def test_a_membership_id_that_is_not_a_uuid_is_a_400(admin, lead):
    response = link_member(admin, lead, "nope")
    assert response.status == 400
