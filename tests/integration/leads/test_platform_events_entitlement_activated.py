"""Platform event `entitlement.activated` {organizationId, userId, entitlementId, courseId, courseName,
transition}: the buyer's lead (found with `find_lead_for_person`) gets a purchase tag named after the
course, a `purchase` timeline entry, and moves to its pipeline's customer stage unless already won (spec
"Course purchases tag the contact + move it to Customer"). Buyers without a lead are no-ops; a replay of
the same entitlement changes nothing."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from leadcrm.leads.tables import lead_tags
from leadcrm.platform.db.engine import get_engine
from tests.support.conversion_helpers import (
    deliver_platform_event,
    insert_lead,
    lead_tag_names,
    make_person,
    set_country,
    unique_email,
)
from tests.support.factories import make_organization
from tests.support.lead_moves_helpers import (
    activities,
    default_pipeline,
    lead_row,
    make_converted,
    make_pipeline,
    outbox_events,
    set_lead_columns,
    status_events,
)

ACTIVATED = "entitlement.activated"


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


@pytest.fixture
def org():
    organization = make_organization()
    set_country(organization.id, "IL")
    return organization


@pytest.fixture
def buyer(org):
    email = unique_email("buyer")
    lead = insert_lead(org.id, name="Dana", email=email)
    person = make_person(None, first_name="Dana", last_name="Cohen", email=email)  # a platform user, not a member
    return lead, person


def _activate(task_lifecycle, org_id, person, *, entitlement_id=None, course="Yoga 101", transition="created_active"):
    detail = {
        "organizationId": str(org_id),
        "userId": str(person.user_id),
        "entitlementId": str(entitlement_id or uuid.uuid4()),
        "courseId": "course-" + course.lower().replace(" ", "-"),
        "courseName": course,
        "transition": transition,
    }
    assert deliver_platform_event(task_lifecycle, ACTIVATED, detail) == {"batchItemFailures": []}
    return detail


def test_the_buyers_lead_gets_a_purchase_tag_named_after_the_course(task_lifecycle, org, buyer):
    lead, person = buyer
    _activate(task_lifecycle, org.id, person, course="Yoga 101")
    assert lead_tag_names(lead) == [("purchase", "Yoga 101")]


def test_a_purchase_timeline_entry_names_the_entitlement_and_course(task_lifecycle, org, buyer):
    lead, person = buyer
    detail = _activate(task_lifecycle, org.id, person, transition="pending_to_active")
    (entry,) = activities(lead, "purchase")
    assert entry["payload"] == {
        "entitlementId": detail["entitlementId"],
        "courseId": detail["courseId"],
        "courseName": "Yoga 101",
    }
    assert entry["actor_user_id"] is None


def test_the_lead_moves_to_the_customer_stage_as_the_system(task_lifecycle, org, buyer):
    lead, person = buyer
    _activate(task_lifecycle, org.id, person)
    row = lead_row(lead)
    assert (row["stage_id"], row["status"]) == (default_pipeline(org.id).stage("customer"), "customer")
    (event,) = status_events(lead)
    assert (event["to_status"], event["actor_user_id"]) == ("customer", None)
    (changed,) = outbox_events(lead)
    assert (changed["payload"]["toStatus"], changed["payload"]["actorUserId"]) == ("customer", None)


def test_a_replay_of_the_same_entitlement_changes_nothing(task_lifecycle, org, buyer):
    lead, person = buyer
    entitlement_id = uuid.uuid4()
    for _ in range(3):
        _activate(task_lifecycle, org.id, person, entitlement_id=entitlement_id)
    assert len(activities(lead, "purchase")) == 1
    assert len(activities(lead, "tag_added")) == 1
    assert len(status_events(lead)) == 1
    assert len(outbox_events(lead)) == 1


def test_a_second_course_adds_its_own_tag_and_entry_without_moving_again(task_lifecycle, org, buyer):
    lead, person = buyer
    _activate(task_lifecycle, org.id, person, course="Yoga 101")
    _activate(task_lifecycle, org.id, person, course="Pilates")
    assert lead_tag_names(lead) == [("purchase", "Pilates"), ("purchase", "Yoga 101")]
    assert len(activities(lead, "purchase")) == 2
    assert len(status_events(lead)) == 1


def test_buyers_of_one_course_share_its_tag(task_lifecycle, org, buyer):
    lead, person = buyer
    other_email = unique_email("other")
    other_lead = insert_lead(org.id, name="Yossi", email=other_email)
    other = make_person(None, first_name="Yossi", email=other_email)
    _activate(task_lifecycle, org.id, person, course="Yoga 101")
    _activate(task_lifecycle, org.id, other, course="YOGA 101")
    assert lead_tag_names(lead) == [("purchase", "Yoga 101")]
    assert lead_tag_names(other_lead) == [("purchase", "Yoga 101")]


def test_a_converted_lead_is_tagged_but_stays_converted(task_lifecycle, org, buyer):
    lead, person = buyer
    sales = default_pipeline(org.id)
    member = make_person(org.id, first_name="Dana")
    make_converted(lead, sales.stage("converted"))
    set_lead_columns(lead, converted_membership_id=member.membership_id)
    _activate(task_lifecycle, org.id, person)
    assert lead_row(lead)["status"] == "converted"
    assert lead_tag_names(lead) == [("purchase", "Yoga 101")]
    assert status_events(lead) == []


def test_a_lost_lead_becomes_a_customer(task_lifecycle, org, buyer):
    lead, person = buyer
    set_lead_columns(lead, stage_id=default_pipeline(org.id).stage("lost"), status="lost", lost_reason="price")
    _activate(task_lifecycle, org.id, person)
    row = lead_row(lead)
    assert (row["status"], row["lost_reason"]) == ("customer", None)


def test_without_a_customer_stage_the_lead_is_tagged_and_stays(task_lifecycle, org, buyer):
    lead, person = buyer
    funnel = make_pipeline(org.id, ["new", "converted", "lost"])
    set_lead_columns(lead, pipeline_id=funnel.id, stage_id=funnel.stage("new"))
    _activate(task_lifecycle, org.id, person)
    assert lead_row(lead)["stage_id"] == funnel.stage("new")
    assert lead_tag_names(lead) == [("purchase", "Yoga 101")]
    assert len(activities(lead, "purchase")) == 1


def test_a_buyer_without_a_lead_is_a_no_op(task_lifecycle, org):
    member = make_person(org.id, first_name="Plain", last_name="Member")
    _activate(task_lifecycle, org.id, member, course="Nobody's Course")
    with get_engine().connect() as conn:
        assert conn.execute(select(lead_tags.c.id).where(lead_tags.c.organization_id == org.id)).first() is None


def test_a_managed_buyer_never_matches_the_parents_lead(task_lifecycle, org):
    email = unique_email("parent")
    lead = insert_lead(org.id, name="Kid", email=email)
    child = make_person(None, first_name="Kid", email=email, kind="managed")
    _activate(task_lifecycle, org.id, child)
    assert lead_tag_names(lead) == []


def test_a_buyer_matched_by_phone_and_name(task_lifecycle, org):
    lead = insert_lead(org.id, name="דנה", phone="050-1234567")
    person = make_person(None, first_name="Dana", phone="+972501234567")
    _activate(task_lifecycle, org.id, person)
    assert lead_tag_names(lead) == [("purchase", "Yoga 101")]


def test_a_buyer_in_another_organization_does_not_touch_this_one(task_lifecycle, org, buyer):
    lead, person = buyer
    _activate(task_lifecycle, make_organization().id, person)
    assert lead_tag_names(lead) == []


def test_a_transition_that_is_not_an_activation_records_nothing(task_lifecycle, org, buyer):
    lead, person = buyer
    _activate(task_lifecycle, org.id, person, transition="active_to_active")
    assert lead_tag_names(lead) == []
    assert activities(lead, "purchase") == []


def test_a_long_course_name_is_cut_to_the_tag_name_limit(task_lifecycle, org, buyer):
    lead, person = buyer
    _activate(task_lifecycle, org.id, person, course="C" * 300)
    ((_, name),) = lead_tag_names(lead)
    assert name == "C" * 100
    assert activities(lead, "purchase")[0]["payload"]["courseName"] == "C" * 300


@pytest.mark.parametrize(
    "change",
    [
        {"entitlementId": "not-a-uuid"},
        {"organizationId": None},
        {"courseName": "   "},
        {"courseId": ""},
    ],
    ids=["bad-entitlement", "no-org", "blank-course-name", "no-course-id"],
)
def test_malformed_details_are_acknowledged_and_dropped(task_lifecycle, org, buyer, change):
    lead, person = buyer
    detail = {
        "organizationId": str(org.id),
        "userId": str(person.user_id),
        "entitlementId": str(uuid.uuid4()),
        "courseId": "c1",
        "courseName": "Yoga",
        "transition": "created_active",
        **change,
    }
    assert deliver_platform_event(task_lifecycle, ACTIVATED, detail) == {"batchItemFailures": []}
    assert lead_tag_names(lead) == []
