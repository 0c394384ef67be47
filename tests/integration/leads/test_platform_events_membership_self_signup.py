"""Platform event `membership.self_signup` {organizationId, userId, membershipId}: the person who signed up on
their own is matched to their lead with `find_lead_for_person` (never a bare email OR phone), and the lead
is linked like link-member, by the system (no actor). A redelivery changes nothing."""

from __future__ import annotations

import uuid

import pytest

from tests.support.conversion_helpers import (
    deliver_platform_event,
    insert_lead,
    make_person,
    outbox_of_type,
    set_country,
    unique_email,
)
from tests.support.factories import make_organization
from tests.support.lead_moves_helpers import activities, default_pipeline, lead_row, outbox_events, status_events

SELF_SIGNUP = "membership.self_signup"
PHONE = "+972501234567"


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


@pytest.fixture
def org():
    organization = make_organization()
    set_country(organization.id, "IL")
    return organization


def _signup(task_lifecycle, org_id, person) -> dict:
    detail = {"organizationId": str(org_id), "userId": str(person.user_id), "membershipId": str(person.membership_id)}
    result = deliver_platform_event(task_lifecycle, SELF_SIGNUP, detail)
    assert result == {"batchItemFailures": []}
    return result


def test_a_signup_with_the_leads_email_links_the_lead(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email.upper())
    member = make_person(org.id, first_name="Dana", last_name="Cohen", email=email)
    _signup(task_lifecycle, org.id, member)
    row = lead_row(lead)
    assert (row["converted_membership_id"], row["status"], row["stage_id"]) == (
        member.membership_id,
        "converted",
        default_pipeline(org.id).stage("converted"),
    )


def test_the_link_is_recorded_as_the_systems_with_a_status_event_and_lead_status_changed(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email)
    member = make_person(org.id, first_name="Dana", email=email)
    _signup(task_lifecycle, org.id, member)
    (event,) = status_events(lead)
    assert (event["from_status"], event["to_status"], event["actor_user_id"]) == ("new", "converted", None)
    (changed,) = outbox_events(lead)
    assert (changed["payload"]["toStatus"], changed["payload"]["actorUserId"]) == ("converted", None)
    (entry,) = activities(lead, "member_linked")
    assert entry["payload"] == {"membershipId": str(member.membership_id), "via": "self_signup"}
    assert outbox_of_type(org.id, "membership.activated") == []  # the platform's own signup already announced it


def test_a_redelivery_changes_nothing(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email)
    member = make_person(org.id, first_name="Dana", email=email)
    for _ in range(3):
        _signup(task_lifecycle, org.id, member)
    assert len(status_events(lead)) == 1
    assert len(outbox_events(lead)) == 1
    assert len(activities(lead, "member_linked")) == 1


def test_a_hand_typed_phone_with_an_agreeing_name_links(task_lifecycle, org):
    lead = insert_lead(org.id, name="דור וידר", phone="050-1234567")
    member = make_person(org.id, first_name="Dor", last_name="Vider", phone=PHONE)
    _signup(task_lifecycle, org.id, member)
    assert lead_row(lead)["converted_membership_id"] == member.membership_id


def test_a_shared_family_phone_does_not_link_someone_elses_lead(task_lifecycle, org):
    lead = insert_lead(org.id, name="Noa Cohen", phone="050-1234567")
    parent = make_person(org.id, first_name="Dana", last_name="Cohen", phone=PHONE)
    _signup(task_lifecycle, org.id, parent)
    assert lead_row(lead)["converted_membership_id"] is None
    assert status_events(lead) == []


def test_an_unnamed_lead_on_a_number_another_member_answers_to_is_not_linked(task_lifecycle, org):
    lead = insert_lead(org.id, phone="050-1234567")
    make_person(org.id, first_name="Yossi", phone=PHONE)
    dana = make_person(org.id, first_name="Dana", phone=PHONE)
    _signup(task_lifecycle, org.id, dana)
    assert lead_row(lead)["converted_membership_id"] is None


def test_a_managed_user_never_matches(task_lifecycle, org):
    email = unique_email("parent")
    lead = insert_lead(org.id, name="Kid", email=email, phone="050-1234567")
    child = make_person(org.id, first_name="Kid", email=email, phone=PHONE, kind="managed")
    _signup(task_lifecycle, org.id, child)
    assert lead_row(lead)["converted_membership_id"] is None


def test_a_signup_without_a_matching_lead_changes_nothing(task_lifecycle, org):
    lead = insert_lead(org.id, name="Somebody", email=unique_email("somebody"))
    member = make_person(org.id, first_name="Dana")
    _signup(task_lifecycle, org.id, member)
    assert lead_row(lead)["converted_membership_id"] is None


def test_an_already_converted_lead_keeps_its_membership(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email, phone="050-1234567")
    first = make_person(org.id, first_name="Dana", email=email)
    _signup(task_lifecycle, org.id, first)
    # A second account that would match on phone and name: the lead is the first member's already.
    second = make_person(org.id, first_name="Dana", phone=PHONE)
    _signup(task_lifecycle, org.id, second)
    assert lead_row(lead)["converted_membership_id"] == first.membership_id
    assert len(status_events(lead)) == 1


def test_a_membership_that_is_not_active_links_nothing(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email)
    pending = make_person(org.id, first_name="Dana", email=email, status="pending_invitation")
    _signup(task_lifecycle, org.id, pending)
    assert lead_row(lead)["converted_membership_id"] is None


def test_a_membership_of_another_organization_links_nothing(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email)
    elsewhere = make_person(make_organization().id, first_name="Dana", email=email)
    _signup(task_lifecycle, org.id, elsewhere)
    assert lead_row(lead)["converted_membership_id"] is None


def test_a_membership_of_another_user_links_nothing(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email)
    dana = make_person(org.id, first_name="Dana", email=email)
    someone = make_person(org.id, first_name="Someone")
    detail = {"organizationId": str(org.id), "userId": str(dana.user_id), "membershipId": str(someone.membership_id)}
    deliver_platform_event(task_lifecycle, SELF_SIGNUP, detail)
    assert lead_row(lead)["converted_membership_id"] is None


@pytest.mark.parametrize(
    "detail",
    [
        {},
        {"organizationId": "nope", "userId": str(uuid.uuid4()), "membershipId": str(uuid.uuid4())},
        {"organizationId": str(uuid.uuid4()), "userId": None, "membershipId": str(uuid.uuid4())},
        {"organizationId": str(uuid.uuid4()), "userId": str(uuid.uuid4()), "membershipId": str(uuid.uuid4())},
    ],
    ids=["empty", "bad-org", "null-user", "unknown-ids"],
)
def test_malformed_or_unknown_details_are_acknowledged_and_dropped(task_lifecycle, detail):
    assert deliver_platform_event(task_lifecycle, SELF_SIGNUP, detail) == {"batchItemFailures": []}


# -- a signup before its membership (held by the directory, applied when the membership is active) ---------


def _platform_member(task_lifecycle, org_id, email, *, status="active", minutes=0):
    from tests.support.directory_sync_helpers import membership_detail, new_ids, user_detail

    _, user_id, membership_id = new_ids()
    deliver_platform_event(task_lifecycle, "user.created", user_detail(user_id, email=email, first_name="Dana"))
    membership = membership_detail(membership_id, org_id, user_id, minutes, role="member", status=status)
    return user_id, membership_id, membership


def test_a_signup_before_its_membership_links_the_lead_when_the_membership_arrives(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email)
    user_id, membership_id, membership = _platform_member(task_lifecycle, org.id, email)
    detail = {"organizationId": str(org.id), "userId": str(user_id), "membershipId": str(membership_id)}
    deliver_platform_event(task_lifecycle, SELF_SIGNUP, detail)
    deliver_platform_event(task_lifecycle, SELF_SIGNUP, detail)  # redelivered while held: still one
    assert lead_row(lead)["converted_membership_id"] is None

    deliver_platform_event(task_lifecycle, "membership.created", membership)
    assert lead_row(lead)["converted_membership_id"] == membership_id
    assert len(activities(lead, "member_linked")) == 1


def test_a_signup_for_a_pending_membership_links_once_the_membership_is_active(task_lifecycle, org):
    email = unique_email("dana")
    lead = insert_lead(org.id, name="Dana", email=email)
    user_id, membership_id, pending = _platform_member(task_lifecycle, org.id, email, status="pending_invitation")
    deliver_platform_event(task_lifecycle, "membership.created", pending)
    detail = {"organizationId": str(org.id), "userId": str(user_id), "membershipId": str(membership_id)}
    deliver_platform_event(task_lifecycle, SELF_SIGNUP, detail)
    assert lead_row(lead)["converted_membership_id"] is None

    deliver_platform_event(
        task_lifecycle, "membership.updated", {**pending, "status": "active", "updatedAt": "2026-12-01T10:00:00Z"}
    )
    assert lead_row(lead)["converted_membership_id"] == membership_id
