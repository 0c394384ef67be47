"""Concurrent converts: the lead row lock makes convert one-way under a race, and the users/memberships
unique indexes make the find-or-create of the user safe when two leads of one person convert at once.

The races are forced: each convert is held right after it looked the email up (where an unsafe version
would decide "no such user" twice) until the other one gets there too, or a short wait proves the other
cannot (it is queued on the lead lock, as it should be).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor, Role
from leadcrm.leads import conversion as service
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError
from tests.support.concurrency import run_together
from tests.support.conversion_helpers import (
    account_users_with_email,
    insert_lead,
    memberships_of_lead_source,
    outbox_of_type,
    unique_email,
)
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import lead_row, status_events

MEETING_WAIT_SECONDS = 1.5


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Events are published after commit; the bus exists."""


def _actor(caller) -> Actor:
    return Actor(
        user_id=caller.user.id,
        organization_id=caller.org_id,
        membership_id=caller.membership.id,
        role=Role.ADMIN,
        features=frozenset({LEAD_MANAGEMENT}),
    )


def _hold_after_the_email_lookup(monkeypatch) -> None:
    meeting = threading.Barrier(2, timeout=MEETING_WAIT_SECONDS)
    real = service._account_user_by_email

    def look_up_then_wait_for_the_other(conn, email):
        found = real(conn, email)
        with contextlib.suppress(threading.BrokenBarrierError):
            meeting.wait()
        return found

    monkeypatch.setattr(service, "_account_user_by_email", look_up_then_wait_for_the_other)


def _convert(private_engine, actor: Actor, lead_id, email: str) -> Callable[[], Any]:
    command = service.ConvertCommand(first_name="Dana", last_name="Cohen", email=email)

    def run() -> Any:
        with UnitOfWork(engine=private_engine) as uow:
            result = service.convert_lead(uow, actor, lead_id, command)
            uow.commit()
            return result

    return run


def test_two_simultaneous_converts_of_one_lead_make_exactly_one_membership(private_engine, monkeypatch):
    admin = make_caller(role="admin")
    actor = _actor(admin)
    lead_id = insert_lead(admin.org_id, name="Dana Cohen")
    _hold_after_the_email_lookup(monkeypatch)

    results, errors = run_together([_convert(private_engine, actor, lead_id, unique_email("a")) for _ in range(2)])

    refused = [e for e in errors if e is not None]
    assert len(refused) == 1, errors
    assert isinstance(refused[0], AppError) and refused[0].code == "LEAD_ALREADY_CONVERTED"
    (converted,) = [r for r in results if r is not None]
    assert isinstance(converted, service.Converted)
    (membership,) = memberships_of_lead_source(lead_id)
    assert membership["id"] == converted.membership_id
    assert lead_row(lead_id)["converted_membership_id"] == converted.membership_id
    assert len(status_events(lead_id)) == 1
    assert len(outbox_of_type(admin.org_id, "membership.activated")) == 1


def test_two_simultaneous_converts_with_the_same_new_email_make_one_user_and_one_membership(
    private_engine, monkeypatch
):
    admin = make_caller(role="admin")
    actor = _actor(admin)
    first, second = insert_lead(admin.org_id, name="Dana"), insert_lead(admin.org_id, name="Dana Cohen")
    email = unique_email("same.person")
    _hold_after_the_email_lookup(monkeypatch)

    results, errors = run_together([_convert(private_engine, actor, lead_id, email) for lead_id in (first, second)])

    assert errors == [None, None]
    outcomes = sorted(type(r).__name__ for r in results)
    assert outcomes == ["Converted", "ExistingMember"]
    converted = next(r for r in results if isinstance(r, service.Converted))
    existing = next(r for r in results if isinstance(r, service.ExistingMember))
    assert existing.membership_id == converted.membership_id
    assert len(account_users_with_email(email)) == 1
    assert len(outbox_of_type(admin.org_id, "membership.activated")) == 1
    # The lead that met an existing member was not touched: linking it is the staff's decision.
    untouched = first if lead_row(first)["converted_membership_id"] is None else second
    assert lead_row(untouched)["status"] == "new"
