"""user.created / .updated from the platform: the whole user at a version, applied only when newer; an
email or subject another user holds is not taken (the user is stored without it and the claim waits)."""

from __future__ import annotations

import logging

from sqlalchemy import insert

from leadcrm.directory.tables import users
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.directory_sync_helpers import (
    T0,
    access,
    consume,
    deliver,
    email,
    held_of,
    membership_detail,
    new_ids,
    organization_detail,
    subject,
    user_detail,
    user_row,
)
from tests.support.rejections import rejected_metrics, rejection_details, rejections

CREATED, UPDATED = "user.created", "user.updated"


def _conversion_user(address: str):
    """A user as lead conversion makes one: an account with the lead's email, no subject, no platform version."""
    user_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(insert(users).values(id=user_id, email=address, first_name="Dana", kind="account"))
    return user_id


def test_user_created_makes_an_account_that_signs_in_with_its_subject():
    _, user_id, _ = new_ids()
    sub, address = subject(), email()
    assert deliver(CREATED, user_detail(user_id, subject=sub, email=address))
    row = user_row(user_id)
    assert (row["auth_subject"], row["email"], row["first_name"], row["last_name"], row["kind"]) == (
        sub,
        address,
        "Dana",
        "Cohen",
        "account",
    )
    assert row["platform_updated_at"] == T0


def test_a_replay_or_an_older_version_changes_nothing():
    _, user_id, _ = new_ids()
    deliver(CREATED, user_detail(user_id, 0, subject=subject(), first_name="Dana"))
    assert deliver(UPDATED, user_detail(user_id, 10, subject=subject(), first_name="Dina"))
    newest = user_row(user_id)
    assert deliver(UPDATED, user_detail(user_id, 10, first_name="Replay")) is False
    assert deliver(CREATED, user_detail(user_id, 0, first_name="Dana")) is False
    assert user_row(user_id) == newest
    assert newest["first_name"] == "Dina"


def test_a_user_made_by_conversion_with_the_platforms_id_takes_its_subject():
    address = email()
    user_id = _conversion_user(address)
    sub = subject()
    assert deliver(CREATED, user_detail(user_id, subject=sub, email=address))
    assert user_row(user_id)["auth_subject"] == sub


def test_an_email_held_by_another_account_is_not_taken_and_the_claim_is_held(caplog):
    address = email()
    converted = _conversion_user(address.upper())
    _, user_id, _ = new_ids()
    sub = subject()
    with caplog.at_level(logging.WARNING):
        assert deliver(CREATED, user_detail(user_id, subject=sub, email=address))
    row = user_row(user_id)
    assert (row["email"], row["auth_subject"]) == (None, sub)  # it still signs in, and its memberships apply
    assert user_row(converted)["email"] == address.upper()
    [claim] = held_of(user_id)
    assert (claim["kind"], claim["waiting_for"], claim["detail"]["email"]) == ("user", "email", address)
    assert "user stored without a value another user holds" in caplog.messages
    assert address not in caplog.text  # no PII in logs
    assert deliver(CREATED, user_detail(user_id, subject=sub, email=address)) is False  # a replay: nothing more


def test_a_held_email_goes_to_its_claimant_when_the_holder_lets_it_go():
    address = email()
    (_, first, _), (_, second, _) = new_ids(), new_ids()
    deliver(CREATED, user_detail(first, 0, subject=subject(), email=address))
    deliver(CREATED, user_detail(second, 1, subject=subject(), email=address))  # the first's change is late
    assert user_row(second)["email"] is None

    deliver(UPDATED, user_detail(first, 2, subject=user_row(first)["auth_subject"], email=email()))
    assert user_row(second)["email"] == address
    assert held_of(second) == []


def test_a_subject_held_by_another_user_is_not_taken_until_it_is_let_go():
    sub = subject()
    (_, first, _), (_, second, _) = new_ids(), new_ids()
    deliver(CREATED, user_detail(first, 0, subject=sub))
    deliver(CREATED, user_detail(second, 1, subject=sub))
    assert (user_row(first)["auth_subject"], user_row(second)["auth_subject"]) == (sub, None)

    deliver(UPDATED, user_detail(first, 2, subject=subject()))
    assert user_row(second)["auth_subject"] == sub


def test_a_newer_version_of_a_claimant_replaces_its_claim():
    address = email()
    holder = _conversion_user(address)
    _, user_id, _ = new_ids()
    deliver(CREATED, user_detail(user_id, 0, email=address))
    other = email()
    deliver(UPDATED, user_detail(user_id, 1, email=other))
    assert user_row(user_id)["email"] == other
    assert held_of(user_id) == []
    assert user_row(holder)["email"] == address


def test_the_users_arrival_lets_its_held_membership_in():
    org_id, user_id, membership_id = new_ids()
    sub = subject()
    deliver("organization.created", organization_detail(org_id))
    deliver("membership.created", membership_detail(membership_id, org_id, user_id, role="admin"))
    assert access(sub, org_id) == "NOT_A_MEMBER"
    deliver(CREATED, user_detail(user_id, subject=sub))
    assert access(sub, org_id).role == "admin"


def test_a_malformed_user_is_rejected_and_nothing_is_written(caplog, capsys):
    _, user_id, _ = new_ids()
    caplog.set_level(logging.INFO)
    message_id, answer = consume(CREATED, user_detail(user_id, email="not an email"))
    assert answer == {"batchItemFailures": []}
    assert user_row(user_id) is None
    assert rejections(caplog) == [("task_lifecycle", message_id, "malformed")]
    assert rejection_details(caplog) == [f"{CREATED}: email is not an email address"]
    assert rejected_metrics(capsys.readouterr().out) == [("task_lifecycle", "malformed")]
