"""Concurrency (spec "Returning leads" → "Concurrency"): return_lead locks the lead row and re-checks its status
under the lock, so touches at once reopen a lead once — one return_count step, one status event, one
lead_returned entry, one lead.status_changed, the note appended once. Each touch runs in its own unit of
work on its own connection, all released together by a barrier."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from leadcrm.leads.capture import PublicSubmission, capture_lead
from leadcrm.leads.released_joins import handle_join_released
from leadcrm.leads.returning import return_lead
from leadcrm.leads.rules.returning import JOIN_RELEASED_NOTE, ReturnKind, ReturnTouch, ReturnVia
from leadcrm.platform.db.uow import UnitOfWork
from tests.support.capture_helpers import activities_of, receipts_of
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import default_pipeline
from tests.support.returning_helpers import (
    insert_lead,
    lead_state,
    leads_of,
    make_person,
    outbox_of,
    status_events_of,
    timeline_of,
)

TOUCHES = 20


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Each unit of work publishes after its commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def sales(owner):
    return default_pipeline(owner.org_id)


def _all_at_once(count: int, work: Callable[[], Any]) -> list[Any]:
    """Runs `work` on `count` threads released together; returns the results, re-raising any error here."""
    start = threading.Barrier(count, timeout=30)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(slot: int) -> None:
        try:
            start.wait()
            results[slot] = work()
        except BaseException as error:  # examined on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a touch never finished (deadlock?)"
    if errors:
        raise errors[0]
    return results


def test_twenty_simultaneous_returns_of_one_closed_lead_reopen_it_exactly_once(private_engine, owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", note="Too expensive.")

    def touch() -> ReturnKind:
        with UnitOfWork(private_engine) as uow:
            outcome = return_lead(
                uow,
                owner.org_id,
                lead_id,
                via=ReturnVia.PUBLIC_CAPTURE,
                actor_user_id=None,
                touch=ReturnTouch(note="Wants a trial"),
            )
            uow.commit()
        return outcome.kind

    kinds = _all_at_once(TOUCHES, touch)
    assert sorted(kinds) == sorted([ReturnKind.TO_NEW_STAGE] + [ReturnKind.ALREADY_OPEN] * (TOUCHES - 1))
    lead = lead_state(lead_id)
    assert (lead["status"], lead["return_count"]) == ("new", 1)
    assert lead["note"] == "Too expensive.\nWants a trial"
    assert [(e["from_status"], e["to_status"]) for e in status_events_of(lead_id)] == [("lost", "new")]
    assert len(timeline_of(lead_id, "lead_returned")) == 1
    assert len(timeline_of(lead_id, "stage_moved")) == 1
    assert len(outbox_of(lead_id, "lead.status_changed")) == 1
    assert len(outbox_of(lead_id, "lead.returned")) == 1


def test_twenty_simultaneous_public_submissions_of_a_closed_lead_reopen_it_once(private_engine, owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "frozen", email="ada@example.com")
    submission = PublicSubmission(
        received={"email": "ada@example.com", "note": "Back again"}, email="ada@example.com", note="Back again"
    )

    def submit() -> None:
        with UnitOfWork(private_engine) as uow:
            capture_lead(uow, owner.org_id, submission)
            uow.commit()

    _all_at_once(TOUCHES, submit)
    assert len(leads_of(owner.org_id)) == 1
    lead = lead_state(lead_id)
    assert (lead["status"], lead["return_count"], lead["note"]) == ("new", 1, "Back again")
    assert len(status_events_of(lead_id)) == 1
    assert len(timeline_of(lead_id, "lead_returned")) == 1
    assert len(activities_of(lead_id, "resubmitted")) == TOUCHES - 1  # the others met an open lead
    assert len(receipts_of(owner.org_id)) == TOUCHES  # every submission's words are kept


def test_two_simultaneous_deliveries_of_one_release_reopen_the_lead_once(private_engine, owner, sales):
    email = f"dana.{uuid.uuid4().hex[:10]}@example.com"
    dana = make_person(email=email)
    lead_id = insert_lead(owner.org_id, sales, "lost", email=email)
    detail = {"organizationId": str(owner.org_id), "userId": str(dana), "membershipId": str(uuid.uuid4())}

    def deliver() -> bool:
        with private_engine.begin() as conn:
            return handle_join_released(conn, detail)

    assert sorted(_all_at_once(2, deliver)) == [False, True]
    lead = lead_state(lead_id)
    assert (lead["return_count"], lead["note"]) == (1, JOIN_RELEASED_NOTE)
    assert len(status_events_of(lead_id)) == 1
    assert len(timeline_of(lead_id, "signup_released")) == 1


def test_two_simultaneous_deliveries_of_one_release_create_one_lead(private_engine, owner, sales):
    email = f"dana.{uuid.uuid4().hex[:10]}@example.com"
    dana = make_person(email=email)
    detail = {"organizationId": str(owner.org_id), "userId": str(dana), "membershipId": str(uuid.uuid4())}

    def deliver() -> bool:
        with private_engine.begin() as conn:
            return handle_join_released(conn, detail)

    assert sorted(_all_at_once(2, deliver)) == [False, True]
    assert len(leads_of(owner.org_id)) == 1
