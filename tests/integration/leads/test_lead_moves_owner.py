"""Ownership: assigneeUserId must be an active staff member of the organization, and every owner change is
on the timeline with who made it and when (lead-intake-principles: "Owner changes")."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_moves_helpers import activities, create_lead, lead_row, patch_lead


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes lead.created after commit; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="coach")


@pytest.fixture
def lead(caller):
    return create_lead(caller)


def _colleague(caller, *, role="coach", status="active", deleted=False):
    user = make_user()
    make_membership(caller.organization, user, role=role, status=status, deleted=deleted)
    return user


def _assign(caller, lead_id, user_id):
    return patch_lead(caller, lead_id, {"assigneeUserId": None if user_id is None else str(user_id)})


@pytest.mark.parametrize("role", ["owner", "admin", "coach"])
def test_a_lead_can_be_assigned_to_an_active_staff_member(caller, lead, role):
    colleague = _colleague(caller, role=role)
    response = _assign(caller, lead["id"], colleague.id)
    assert response.status == 200, response.body
    assert response.data["assigneeUserId"] == str(colleague.id)
    assert lead_row(lead["id"])["assigned_to_user_id"] == colleague.id


def test_an_owner_change_is_on_the_timeline_with_who_and_when(caller, lead):
    colleague = _colleague(caller)
    _assign(caller, lead["id"], colleague.id)
    (entry,) = activities(lead["id"], "owner_changed")
    assert entry["payload"] == {"fromUserId": None, "toUserId": str(colleague.id)}
    assert entry["actor_user_id"] == caller.user.id
    assert entry["occurred_at"] is not None


def test_a_reassignment_records_the_previous_and_the_new_owner(caller, lead):
    first, second = _colleague(caller), _colleague(caller)
    _assign(caller, lead["id"], first.id)
    _assign(caller, lead["id"], second.id)
    entries = activities(lead["id"], "owner_changed")
    assert entries[-1]["payload"] == {"fromUserId": str(first.id), "toUserId": str(second.id)}


def test_null_unassigns_and_is_recorded(caller, lead):
    colleague = _colleague(caller)
    _assign(caller, lead["id"], colleague.id)
    response = _assign(caller, lead["id"], None)
    assert response.data["assigneeUserId"] is None
    assert activities(lead["id"], "owner_changed")[-1]["payload"] == {
        "fromUserId": str(colleague.id),
        "toUserId": None,
    }


def test_assigning_the_same_owner_again_records_nothing(caller, lead):
    colleague = _colleague(caller)
    _assign(caller, lead["id"], colleague.id)
    _assign(caller, lead["id"], colleague.id)
    assert len(activities(lead["id"], "owner_changed")) == 1


def test_the_caller_may_take_the_lead_themselves(caller, lead):
    assert _assign(caller, lead["id"], caller.user.id).status == 200


def test_a_member_is_not_assignable(caller, lead):
    member = _colleague(caller, role="member")
    response = _assign(caller, lead["id"], member.id)
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")
    assert lead_row(lead["id"])["assigned_to_user_id"] is None


def test_staff_of_another_organization_is_not_assignable(caller, lead):
    outsider = make_caller(role="owner")
    response = _assign(caller, lead["id"], outsider.user.id)
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")


@pytest.mark.parametrize("status", ["cancelled", "suspended", "pending_invitation"])
def test_staff_whose_membership_is_not_active_is_not_assignable(caller, lead, status):
    former = _colleague(caller, status=status)
    response = _assign(caller, lead["id"], former.id)
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")


def test_staff_whose_membership_was_deleted_is_not_assignable(caller, lead):
    former = _colleague(caller, deleted=True)
    response = _assign(caller, lead["id"], former.id)
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")


def test_an_unknown_user_is_not_assignable_and_the_answer_reveals_nothing(caller, lead):
    unknown = _assign(caller, lead["id"], uuid.uuid4())
    member = _assign(caller, lead["id"], _colleague(caller, role="member").id)
    assert (unknown.status, unknown.body) == (member.status, member.body)


def test_a_refused_assignment_changes_nothing_else_in_the_same_request(caller, lead):
    member = _colleague(caller, role="member")
    response = patch_lead(caller, lead["id"], {"assigneeUserId": str(member.id), "isTest": True})
    assert response.status == 400
    assert lead_row(lead["id"])["is_test"] is False
    assert activities(lead["id"]) == []


def test_an_assignee_that_is_not_a_uuid_is_a_400(caller, lead):
    response = call_api(
        "PATCH", leads_path(caller.org_id, lead["id"]), sub=caller.sub, body={"assigneeUserId": "someone"}
    )
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")
