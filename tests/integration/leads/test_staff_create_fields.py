"""G2 staff create: source defaults to manual, a campaignId must be a live hook of the organization, an
assignee must be its active staff, and a receipt keeps what the staff member sent."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import activities_of, lead_count, make_campaign, receipts_of
from tests.support.factories import make_caller, make_membership, make_user


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating a lead publishes `lead.created` after commit; the bus exists."""


def _create(caller, body):
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body)


def test_source_defaults_to_manual():
    assert _create(make_caller(), {"name": "Ada"}).data["source"] == "manual"


def test_source_can_be_given_by_staff():
    assert _create(make_caller(), {"name": "Ada", "source": "referral"}).data["source"] == "referral"


# --- campaignId --------------------------------------------------------------------------------------------


def test_a_campaign_of_the_organization_is_attached():
    caller = make_caller()
    campaign_id = make_campaign(caller.org_id)
    lead = _create(caller, {"name": "Ada", "campaignId": str(campaign_id)}).data
    assert lead["campaignId"] == str(campaign_id)


def test_another_organizations_campaign_is_a_400_campaign_not_found_like_a_random_id():
    caller = make_caller()
    foreign = make_campaign(make_caller().org_id)
    foreign_answer = _create(caller, {"name": "Ada", "campaignId": str(foreign)})
    random_answer = _create(caller, {"name": "Ada", "campaignId": str(uuid.uuid4())})
    assert (foreign_answer.status, foreign_answer.error_code) == (400, "CAMPAIGN_NOT_FOUND")
    assert foreign_answer.body == random_answer.body
    assert lead_count(caller.org_id) == 0


def test_an_archived_campaign_cannot_be_attached():
    caller = make_caller()
    archived = make_campaign(caller.org_id, archived=True)
    assert _create(caller, {"name": "Ada", "campaignId": str(archived)}).error_code == "CAMPAIGN_NOT_FOUND"


def test_a_campaign_id_that_is_not_a_uuid_is_a_400_validation_failed():
    response = _create(make_caller(), {"name": "Ada", "campaignId": "spring"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


# --- assigneeUserId --------------------------------------------------------------------------------------


def test_an_active_staff_member_can_be_assigned_at_creation():
    caller = make_caller(role="owner")
    coach = make_user()
    make_membership(caller.organization, coach, role="coach")
    lead = _create(caller, {"name": "Ada", "assigneeUserId": str(coach.id)}).data
    assert lead["assigneeUserId"] == str(coach.id)


def test_the_assignment_at_creation_is_on_the_timeline_with_who_did_it():
    caller = make_caller(role="owner")
    lead = _create(caller, {"name": "Ada", "assigneeUserId": str(caller.user.id)}).data
    [entry] = activities_of(lead["id"], "owner_changed")
    assert entry["actor_user_id"] == caller.user.id
    assert entry["payload"] == {"fromUserId": None, "toUserId": str(caller.user.id)}


@pytest.mark.parametrize("role", ["member"])
def test_a_member_who_is_not_staff_cannot_be_assigned(role):
    caller = make_caller(role="owner")
    member = make_user()
    make_membership(caller.organization, member, role=role)
    response = _create(caller, {"name": "Ada", "assigneeUserId": str(member.id)})
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")


def test_staff_of_another_organization_cannot_be_assigned():
    caller = make_caller(role="owner")
    outsider = make_caller(role="owner")
    response = _create(caller, {"name": "Ada", "assigneeUserId": str(outsider.user.id)})
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")
    assert lead_count(caller.org_id) == 0


# --- receipts ----------------------------------------------------------------------------------------------


def test_a_staff_create_keeps_a_receipt_of_what_was_sent():
    caller = make_caller()
    lead = _create(caller, {"name": "Ada", "email": "ada@example.com", "isTest": True}).data
    [receipt] = receipts_of(caller.org_id)
    assert str(receipt["lead_id"]) == lead["id"]
    assert (receipt["channel"], receipt["duplicate"]) == ("staff", False)
    assert receipt["payload"] == {"name": "Ada", "email": "ada@example.com", "isTest": True}
