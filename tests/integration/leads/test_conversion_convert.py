"""G4: POST /organizations/{orgId}/leads/{leadId}/convert (owner/admin). Convert is one-way and idempotent,
an email of an active member links instead of duplicating, and the lead lands on its pipeline's converted
stage, else its customer stage, else stays (spec "Pipeline win coverage")."""

from __future__ import annotations

import uuid

import pytest

from tests.support.conversion_helpers import (
    account_users_with_email,
    convert,
    insert_lead,
    make_person,
    membership_row,
    memberships_of_lead_source,
    outbox_of_type,
    unique_email,
)
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import (
    activities,
    add_stage,
    archive_stage,
    default_pipeline,
    lead_row,
    make_pipeline,
    outbox_events,
    patch_lead,
    set_lead_columns,
    status_events,
)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Convert publishes membership.activated and lead.status_changed after commit; the bus exists."""


@pytest.fixture
def admin():
    return make_caller(role="admin")


@pytest.fixture
def lead(admin):
    return insert_lead(admin.org_id, name="Dana Cohen", email="dana@example.com", phone="050-1234567")


def _body(email=None, **extra):
    return {"firstName": "Dana", "lastName": "Cohen", "email": email or unique_email("dana"), **extra}


# -- a new member ------------------------------------------------------------------------------------------


def test_convert_creates_an_active_member_and_answers_converted(admin, lead):
    response = convert(admin, lead, _body())
    assert response.status == 200, response.body
    data = response.data
    assert set(data) == {"outcome", "membershipId", "userId", "role", "status"}
    assert (data["outcome"], data["role"], data["status"]) == ("converted", "member", "active")
    membership = membership_row(data["membershipId"])
    assert (membership["organization_id"], membership["user_id"], membership["source_lead_id"]) == (
        admin.org_id,
        uuid.UUID(data["userId"]),
        lead,
    )
    assert (membership["role"], membership["status"], membership["deleted_at"]) == ("member", "active", None)


def test_convert_sets_converted_membership_id_and_lands_on_the_converted_stage(admin, lead):
    sales = default_pipeline(admin.org_id)
    data = convert(admin, lead, _body()).data
    row = lead_row(lead)
    assert row["converted_membership_id"] == uuid.UUID(data["membershipId"])
    assert (row["stage_id"], row["status"]) == (sales.stage("converted"), "converted")


def test_convert_records_a_status_event_with_the_actor_and_emits_lead_status_changed(admin, lead):
    sales = default_pipeline(admin.org_id)
    convert(admin, lead, _body())
    (event,) = status_events(lead)
    assert (event["from_status"], event["to_status"], event["to_stage_id"], event["actor_user_id"]) == (
        "new",
        "converted",
        sales.stage("converted"),
        admin.user.id,
    )
    (changed,) = outbox_events(lead)
    assert changed["payload"]["toStatus"] == "converted"
    assert changed["payload"]["actorUserId"] == str(admin.user.id)


def test_convert_emits_membership_activated_with_ids_only(admin, lead):
    data = convert(admin, lead, _body()).data
    (event,) = outbox_of_type(admin.org_id, "membership.activated")
    assert event["aggregate_id"] == uuid.UUID(data["membershipId"])
    assert event["payload"] == {
        "source": "lead_converted",
        "organizationId": str(admin.org_id),
        "userId": data["userId"],
        "membershipId": data["membershipId"],
        "role": "member",
        "leadId": str(lead),
    }


def test_convert_writes_a_member_linked_timeline_entry(admin, lead):
    data = convert(admin, lead, _body()).data
    (entry,) = activities(lead, "member_linked")
    assert entry["payload"] == {"membershipId": data["membershipId"], "via": "convert"}
    assert entry["actor_user_id"] == admin.user.id


def test_convert_gives_the_role_asked_for(admin, lead):
    data = convert(admin, lead, _body(role="coach")).data
    assert data["role"] == "coach"
    assert membership_row(data["membershipId"])["role"] == "coach"


def test_an_owner_may_convert(lead, admin):
    owner = make_caller(role="owner", organization=admin.organization)
    assert convert(owner, lead, _body()).status == 200


def test_convert_creates_the_user_with_the_given_names(admin, lead):
    email = unique_email("New.Person")
    convert(admin, lead, _body(email=email.replace("example.com", "Example.COM")))
    (user,) = account_users_with_email(email)
    assert (user["first_name"], user["last_name"], user["kind"], user["auth_subject"]) == (
        "Dana",
        "Cohen",
        "account",
        None,
    )


def test_an_email_of_a_user_without_a_membership_here_reuses_that_user(admin, lead):
    other = make_caller(role="admin")
    email = unique_email("Reuse.Me")
    elsewhere = make_person(other.org_id, email=email)  # a member of another organization
    data = convert(admin, lead, _body(email=email.upper())).data
    assert data["outcome"] == "converted"
    assert data["userId"] == str(elsewhere.user_id)
    assert len(account_users_with_email(email)) == 1


def test_a_soft_deleted_membership_does_not_block_a_new_one(admin, lead):
    email = unique_email("former")
    former = make_person(admin.org_id, first_name="Dana", email=email, deleted=True)
    data = convert(admin, lead, _body(email=email)).data
    assert data["outcome"] == "converted"
    assert data["userId"] == str(former.user_id)
    assert data["membershipId"] != str(former.membership_id)


def test_a_managed_user_sharing_the_email_is_not_the_member(admin, lead):
    email = unique_email("parent")
    child = make_person(admin.org_id, first_name="Kid", email=email, kind="managed")
    data = convert(admin, lead, _body(email=email)).data
    assert data["outcome"] == "converted"
    assert data["userId"] != str(child.user_id)


# -- an existing member ------------------------------------------------------------------------------------


def test_an_email_of_an_active_member_answers_existing_member_and_writes_nothing(admin, lead):
    email = unique_email("dana.levi")
    member = make_person(admin.org_id, first_name="Dana", last_name="Levi", email=email)
    before = lead_row(lead)
    response = convert(admin, lead, _body(email=f"  {email.upper()} "))
    assert response.status == 200, response.body
    assert response.data == {
        "outcome": "existing_member",
        "existingMember": {"membershipId": str(member.membership_id), "firstName": "Dana", "lastName": "Levi"},
    }
    assert lead_row(lead) == before
    assert status_events(lead) == []
    assert memberships_of_lead_source(lead) == []
    assert outbox_of_type(admin.org_id, "membership.activated") == []


@pytest.mark.parametrize("status", ["pending_invitation", "cancelled", "suspended"])
def test_a_non_active_membership_is_refused_as_already_a_member(admin, lead, status):
    email = unique_email("someone")
    make_person(admin.org_id, email=email, status=status)
    response = convert(admin, lead, _body(email=email))
    assert response.status == 400
    assert response.body["error"] == {
        "code": "ALREADY_A_MEMBER",
        "message": "User is already a member of this organization",
    }
    assert lead_row(lead)["converted_membership_id"] is None


# -- one-way -----------------------------------------------------------------------------------------------


def test_a_second_convert_is_refused_with_lead_already_converted(admin, lead):
    convert(admin, lead, _body())
    response = convert(admin, lead, _body())
    assert response.status == 400
    assert response.body["error"] == {"code": "LEAD_ALREADY_CONVERTED", "message": "Lead has already been converted"}
    assert len(memberships_of_lead_source(lead)) == 1


def test_a_converted_lead_refuses_convert_even_for_an_active_members_email(admin, lead):
    email = unique_email("m")
    member = make_person(admin.org_id, email=email)
    set_lead_columns(lead, converted_membership_id=member.membership_id)
    assert convert(admin, lead, _body(email=email)).error_code == "LEAD_ALREADY_CONVERTED"


def test_after_convert_a_move_back_into_a_converted_stage_is_a_repositioning(admin, lead):
    sales = default_pipeline(admin.org_id)
    convert(admin, lead, _body())
    assert patch_lead(admin, lead, {"stageId": str(sales.stage("contacted"))}).status == 200
    assert patch_lead(admin, lead, {"stageId": str(sales.stage("converted"))}).status == 200


# -- where the lead lands ----------------------------------------------------------------------------------


def _lead_on(admin, pipeline):
    lead_id = insert_lead(admin.org_id, name="Course buyer")
    set_lead_columns(lead_id, pipeline_id=pipeline.id, stage_id=pipeline.stage("new"), status="new")
    return lead_id


def test_without_a_converted_stage_the_lead_lands_on_the_customer_stage(admin):
    course = make_pipeline(admin.org_id, ["new", "contacted", "customer", "lost"])
    lead_id = _lead_on(admin, course)
    convert(admin, lead_id, _body())
    row = lead_row(lead_id)
    assert (row["stage_id"], row["status"]) == (course.stage("customer"), "customer")
    assert outbox_events(lead_id)[0]["payload"]["toStatus"] == "customer"


def test_an_archived_converted_stage_is_skipped_for_the_customer_stage(admin):
    course = make_pipeline(admin.org_id, ["new", "converted", "customer", "lost"])
    archive_stage(course.stage("converted"))
    lead_id = _lead_on(admin, course)
    convert(admin, lead_id, _body())
    assert lead_row(lead_id)["stage_id"] == course.stage("customer")


def test_the_first_converted_stage_by_position_is_used(admin):
    course = add_stage(make_pipeline(admin.org_id, ["new", "converted", "lost"]), admin.org_id, "converted")
    lead_id = _lead_on(admin, course)
    convert(admin, lead_id, _body())
    assert lead_row(lead_id)["stage_id"] == course.stage("converted", 0)


def test_without_any_win_stage_the_lead_stays_where_it_is_and_no_status_event_is_written(admin):
    # A pipeline that lost its win stages (written directly: the API keeps win coverage).
    course = make_pipeline(admin.org_id, ["new", "contacted", "lost"])
    lead_id = _lead_on(admin, course)
    data = convert(admin, lead_id, _body()).data
    row = lead_row(lead_id)
    assert (row["stage_id"], row["status"]) == (course.stage("new"), "new")
    assert row["converted_membership_id"] == uuid.UUID(data["membershipId"])
    assert status_events(lead_id) == []
    assert outbox_events(lead_id) == []


def test_a_lost_lead_converts_and_loses_its_lost_reason(admin, lead):
    sales = default_pipeline(admin.org_id)
    set_lead_columns(lead, stage_id=sales.stage("lost"), status="lost", lost_reason="too_expensive")
    convert(admin, lead, _body())
    row = lead_row(lead)
    assert (row["status"], row["lost_reason"]) == ("converted", None)


# -- gates and bad input -----------------------------------------------------------------------------------


def test_a_coach_may_not_convert(admin, lead):
    coach = make_caller(role="coach", organization=admin.organization)
    response = convert(coach, lead, _body())
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")
    assert lead_row(lead)["converted_membership_id"] is None


def test_another_organizations_lead_answers_404_like_a_random_id(admin):
    other = make_caller(role="admin")
    foreign = insert_lead(other.org_id, name="Foreign")
    for lead_id in (foreign, uuid.uuid4(), "not-a-uuid"):
        response = convert(admin, lead_id, _body())
        assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")
    assert lead_row(foreign)["converted_membership_id"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"lastName": "Cohen", "email": "a@example.com"},
        {"firstName": "Dana", "lastName": "Cohen"},
        {"firstName": "Dana", "email": "not an email"},
        {"firstName": "", "email": "a@example.com"},
        {"firstName": "D" * 101, "email": "a@example.com"},
        {"firstName": "Dana", "email": "a@example.com", "role": "owner"},
        {"firstName": "Dana", "email": "a@example.com", "extra": 1},
        {"firstName": "Da\x00na", "email": "a@example.com"},
    ],
)
def test_bad_bodies_are_refused_before_anything_is_written(admin, lead, body):
    response = convert(admin, lead, body)
    assert response.status == 400, response.body
    assert lead_row(lead)["converted_membership_id"] is None
