"""membership.created / .updated / .deleted from the platform: inserted whole or held until its user and
organization are here, versioned by updatedAt, a deletion a tombstone; roles and removals apply to the very
next request; the older membership.status_changed still mirrors the status."""

from __future__ import annotations

import logging

import pytest

from tests.support.directory_sync_helpers import (
    T0,
    access,
    at,
    consume,
    deliver,
    held_of,
    membership_deletion,
    membership_detail,
    membership_row,
    new_ids,
    organization_detail,
    subject,
    user_detail,
)
from tests.support.rejections import rejected_metrics, rejection_details, rejections

CREATED, UPDATED, DELETED = "membership.created", "membership.updated", "membership.deleted"


@pytest.fixture
def org_id():
    org_id, _, _ = new_ids()
    deliver("organization.created", organization_detail(org_id))
    return org_id


@pytest.fixture
def person():
    _, user_id, _ = new_ids()
    sub = subject()
    deliver("user.created", user_detail(user_id, subject=sub))
    return user_id, sub


def test_membership_created_admits_its_user_with_its_role(org_id, person):
    user_id, sub = person
    _, _, membership_id = new_ids()
    assert deliver(CREATED, membership_detail(membership_id, org_id, user_id, role="coach"))
    actor = access(sub, org_id)
    assert (actor.role, actor.membership_id, actor.user_id) == ("coach", membership_id, user_id)
    assert membership_row(membership_id)["platform_updated_at"] == T0


def test_a_role_change_applies_to_the_very_next_request(org_id, person):
    user_id, sub = person
    _, _, membership_id = new_ids()
    deliver(CREATED, membership_detail(membership_id, org_id, user_id, 0, role="coach"))
    assert access(sub, org_id).is_staff
    deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 1, role="member"))
    assert access(sub, org_id).is_staff is False


def test_a_removal_applies_to_the_very_next_request_and_no_older_event_revives_it(org_id, person):
    user_id, sub = person
    _, _, membership_id = new_ids()
    deliver(CREATED, membership_detail(membership_id, org_id, user_id, 0))
    assert deliver(DELETED, membership_deletion(membership_id, org_id, 5))
    assert access(sub, org_id) == "NOT_A_MEMBER"
    deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 3, role="owner"))
    deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 9, role="owner"))
    assert access(sub, org_id) == "NOT_A_MEMBER"
    assert membership_row(membership_id)["deleted_at"] is not None


def test_a_replay_or_an_older_version_changes_nothing(org_id, person):
    user_id, _ = person
    _, _, membership_id = new_ids()
    deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 10, role="admin"))
    first = membership_row(membership_id)
    assert deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 10, role="admin")) is False
    assert deliver(CREATED, membership_detail(membership_id, org_id, user_id, 0, role="coach")) is False
    assert deliver(DELETED, membership_deletion(membership_id, org_id, 20))
    assert deliver(DELETED, membership_deletion(membership_id, org_id, 20)) is False
    assert membership_row(membership_id)["role"] == first["role"] == "admin"


def test_a_membership_before_its_user_is_held_whole_and_inserted_when_the_user_arrives(org_id):
    _, user_id, membership_id = new_ids()
    assert deliver(CREATED, membership_detail(membership_id, org_id, user_id, 0, role="coach"))
    assert deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 2, role="admin"))
    deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 1, role="member"))  # older: not kept
    assert membership_row(membership_id) is None
    [held] = held_of(membership_id)
    assert (held["waiting_for"], held["detail"]["role"], held["version"]) == ("user", "admin", T0.replace(minute=2))

    deliver("user.created", user_detail(user_id, subject=subject()))
    row = membership_row(membership_id)
    assert (row["role"], row["user_id"], row["organization_id"]) == ("admin", user_id, org_id)
    assert held_of(membership_id) == []


def test_a_membership_before_its_organization_is_inserted_when_the_organization_arrives(person):
    user_id, sub = person
    org_id, _, membership_id = new_ids()
    deliver(CREATED, membership_detail(membership_id, org_id, user_id, role="owner"))
    assert [h["waiting_for"] for h in held_of(membership_id)] == ["organization"]
    deliver("organization.created", organization_detail(org_id))
    assert access(sub, org_id).role == "owner"


def test_a_membership_before_both_waits_for_each_in_turn():
    org_id, user_id, membership_id = new_ids()
    sub = subject()
    deliver(CREATED, membership_detail(membership_id, org_id, user_id))
    deliver("user.created", user_detail(user_id, subject=sub))
    assert [h["waiting_for"] for h in held_of(membership_id)] == ["organization"]
    deliver("organization.created", organization_detail(org_id))
    assert access(sub, org_id).role == "coach"


def test_a_deletion_before_the_creation_is_held_and_the_creation_arrives_deleted(org_id, person):
    user_id, sub = person
    _, _, membership_id = new_ids()
    assert deliver(DELETED, membership_deletion(membership_id, org_id, 5))
    assert [h["waiting_for"] for h in held_of(membership_id)] == ["creation"]
    deliver(CREATED, membership_detail(membership_id, org_id, user_id, 0))
    assert membership_row(membership_id)["deleted_at"] == T0.replace(minute=5)
    assert access(sub, org_id) == "NOT_A_MEMBER"
    assert held_of(membership_id) == []


def test_a_new_membership_of_a_person_with_a_live_one_waits_for_its_deletion(org_id, person):
    user_id, sub = person
    (_, _, old), (_, _, new) = new_ids(), new_ids()
    deliver(CREATED, membership_detail(old, org_id, user_id, 0, role="member"))
    deliver(CREATED, membership_detail(new, org_id, user_id, 10, role="coach"))  # before the old one's deletion
    assert [h["waiting_for"] for h in held_of(new)] == ["live_membership"]
    deliver(DELETED, membership_deletion(old, org_id, 9))
    assert access(sub, org_id).membership_id == new
    assert held_of(new) == []


def test_an_event_moving_a_membership_to_another_organization_or_user_is_rejected(org_id, person, caplog, capsys):
    user_id, _ = person
    _, other_user, membership_id = new_ids()
    other_org, _, _ = new_ids()
    deliver("organization.created", organization_detail(other_org))
    deliver(CREATED, membership_detail(membership_id, org_id, user_id, 0))
    caplog.set_level(logging.INFO)
    moved = [
        consume(UPDATED, membership_detail(membership_id, other_org, user_id, 1)),
        consume(UPDATED, membership_detail(membership_id, org_id, other_user, 2)),
    ]
    assert [answer for _, answer in moved] == [{"batchItemFailures": []}] * 2  # acknowledged
    assert rejections(caplog) == [("task_lifecycle", message_id, "invalid_data") for message_id, _ in moved]
    assert rejected_metrics(capsys.readouterr().out) == [("task_lifecycle", "invalid_data")] * 2
    row = membership_row(membership_id)
    assert (row["organization_id"], row["user_id"], row["platform_updated_at"]) == (org_id, user_id, T0)


def test_a_status_change_for_a_membership_the_directory_does_not_have_is_rejected(org_id, caplog, capsys):
    _, _, membership_id = new_ids()
    status = {"organizationId": str(org_id), "membershipId": str(membership_id), "status": "suspended"}
    caplog.set_level(logging.INFO)
    message_id, answer = consume("membership.status_changed", status)
    assert answer == {"batchItemFailures": []}
    assert rejections(caplog) == [("task_lifecycle", message_id, "refused")]
    assert rejected_metrics(capsys.readouterr().out) == [("task_lifecycle", "refused")]
    assert membership_row(membership_id) is None and held_of(membership_id) == []


def test_a_held_membership_is_no_rejection(person, caplog, capsys):
    """Its organization is not here yet: it waits, and the consumer records nothing as rejected."""
    user_id, _ = person
    org_id, _, membership_id = new_ids()
    caplog.set_level(logging.INFO)
    _, answer = consume(CREATED, membership_detail(membership_id, org_id, user_id))
    assert answer == {"batchItemFailures": []}
    assert [h["waiting_for"] for h in held_of(membership_id)] == ["organization"]
    assert rejections(caplog) == [] and rejected_metrics(capsys.readouterr().out) == []


def test_status_changed_with_a_time_is_versioned_like_the_others(org_id, person):
    user_id, sub = person
    _, _, membership_id = new_ids()
    deliver(CREATED, membership_detail(membership_id, org_id, user_id, 0))
    status = {"organizationId": str(org_id), "membershipId": str(membership_id)}
    assert deliver("membership.status_changed", {**status, "status": "suspended", "changedAt": at(5)})
    assert deliver("membership.status_changed", {**status, "status": "active", "changedAt": at(4)}) is False
    assert access(sub, org_id) == "NOT_A_MEMBER"
    deliver(UPDATED, membership_detail(membership_id, org_id, user_id, 6, status="active"))
    assert access(sub, org_id).role == "coach"


@pytest.mark.parametrize(
    ("detail_type", "changes", "reason"),
    [
        (CREATED, {"role": "superuser"}, "role is not one of owner, admin, coach, member"),
        (UPDATED, {"status": "gone"}, "status is not one of active, pending_invitation, cancelled, suspended"),
        (UPDATED, {"userId": "me"}, "userId is not a UUID"),
        (DELETED, {"deletedAt": "soon"}, "deletedAt: not an ISO 8601 instant"),
    ],
)
def test_a_malformed_detail_is_rejected_with_its_reason_and_nothing_is_written(
    org_id, person, detail_type, changes, reason, caplog, capsys
):
    user_id, _ = person
    _, _, membership_id = new_ids()
    detail = {**membership_detail(membership_id, org_id, user_id), **changes}
    caplog.set_level(logging.INFO)
    message_id, answer = consume(detail_type, detail)
    assert answer == {"batchItemFailures": []}  # acknowledged: a retry could never make it valid
    assert membership_row(membership_id) is None and held_of(membership_id) == []
    assert rejections(caplog) == [("task_lifecycle", message_id, "malformed")]
    assert rejection_details(caplog) == [f"{detail_type}: {reason}"]
    assert rejected_metrics(capsys.readouterr().out) == [("task_lifecycle", "malformed")]


