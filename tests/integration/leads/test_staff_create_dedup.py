"""G2 staff create: dedup per organization by email or phone digits -> 409 DUPLICATE_LEAD naming the
existing lead; concurrent creates of one person make one lead; an Idempotency-Key replay never 409s."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from leadcrm.directory.rules import Actor, Role
from leadcrm.leads import intake as lead_service
from leadcrm.leads.capture import PublicSubmission, capture_lead
from leadcrm.leads.intake import DuplicateLead, NewLead, create_lead
from leadcrm.platform.db.uow import UnitOfWork
from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import lead_count, lead_rows, receipts_of
from tests.support.factories import make_caller
from tests.support.returning_helpers import close_lead

ADA = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958"}


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating a lead publishes `lead.created` after commit; the bus exists."""


def _create(caller, body=ADA, **kwargs):
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body, **kwargs)


def test_the_same_email_in_the_same_organization_is_a_409_duplicate_lead():
    caller = make_caller()
    first = _create(caller).data
    response = _create(caller, {"name": "Ada L.", "email": "ada@example.com"})
    assert (response.status, response.error_code) == (409, "DUPLICATE_LEAD")
    assert response.body["error"]["existingLeadId"] == first["id"]
    assert response.body["error"]["existingLeadName"] == "Ada Lovelace"


def test_email_dedup_ignores_case():
    caller = make_caller()
    _create(caller)
    assert _create(caller, {"email": "ADA@Example.com"}).error_code == "DUPLICATE_LEAD"


def test_the_same_phone_is_a_duplicate_whatever_its_formatting():
    caller = make_caller()
    first = _create(caller, {"name": "Dana", "phone": "050-123 4567"}).data
    response = _create(caller, {"name": "Someone else", "phone": "(050) 1234567"})
    assert response.status == 409
    assert response.body["error"]["existingLeadId"] == first["id"]


def test_a_phone_match_is_enough_even_with_another_email():
    caller = make_caller()
    _create(caller)
    assert _create(caller, {"email": "other@example.com", "phone": "+44 (20) 7946-0958"}).status == 409


def test_the_same_email_and_phone_in_another_organization_is_allowed():
    first, second = make_caller(), make_caller()
    assert _create(first).status == 201
    assert _create(second).status == 201


def test_names_alone_never_make_a_duplicate():
    caller = make_caller()
    assert _create(caller, {"name": "Ada Lovelace"}).status == 201
    assert _create(caller, {"name": "Ada Lovelace"}).status == 201


def test_a_duplicate_writes_nothing():
    caller = make_caller()
    _create(caller)
    _create(caller, {"email": "ada@example.com", "note": "again"})
    assert lead_count(caller.org_id) == 1
    assert len(receipts_of(caller.org_id)) == 1


def test_a_duplicate_of_an_unnamed_lead_names_nobody():
    caller = make_caller()
    _create(caller, {"email": "anon@example.com"})
    response = _create(caller, {"email": "anon@example.com"})
    assert response.body["error"]["existingLeadName"] is None


def test_a_closed_lead_is_reopened_instead_of_reported_as_a_duplicate():
    caller = make_caller()
    first = _create(caller).data
    close_lead(first["id"], "lost")
    response = _create(caller)
    assert (response.status, response.body["meta"]) == (200, {"outcome": "reopened"})
    assert response.data["id"] == first["id"]
    assert lead_count(caller.org_id) == 1


def test_a_replay_with_the_idempotency_key_answers_the_first_201_not_a_409():
    caller = make_caller()
    key = str(uuid.uuid4())
    first = _create(caller, headers={"idempotency-key": key})
    again = _create(caller, headers={"idempotency-key": key})
    assert first.status == again.status == 201
    assert again.data["id"] == first.data["id"]
    assert lead_count(caller.org_id) == 1


def test_a_new_key_for_the_same_person_is_a_409_and_leaves_the_key_unused():
    caller = make_caller()
    _create(caller, headers={"idempotency-key": str(uuid.uuid4())})
    key = str(uuid.uuid4())
    assert _create(caller, headers={"idempotency-key": key}).status == 409
    # The 409 rolled back with the key's claim: the key is still free for another request.
    assert _create(caller, {"email": "grace@example.com"}, headers={"idempotency-key": key}).status == 201


# --- concurrency -------------------------------------------------------------------------------------------


def _actor(caller) -> Actor:
    return Actor(
        user_id=caller.user.id,
        organization_id=caller.org_id,
        membership_id=caller.membership.id,
        role=Role(caller.membership.role),
        features=frozenset({"lead_management"}),
    )


def _race(private_engine, monkeypatch, work) -> list:
    """Run `work(uow)` in two transactions at once; the duplicate check is slowed down so that, without the
    per-person lock, both would pass it before either inserts."""
    real_find = lead_service.find_same_person

    def slow_find(*args, **kwargs):
        found = real_find(*args, **kwargs)
        time.sleep(0.3)
        return found

    monkeypatch.setattr(lead_service, "find_same_person", slow_find)
    start = threading.Barrier(2, timeout=10)
    outcomes: list = []

    def attempt() -> None:
        try:
            with UnitOfWork(private_engine) as uow:  # publishes to the test bus, leaving no outbox backlog
                start.wait()
                work(uow)
                uow.commit()
            outcomes.append("created")
        except DuplicateLead:
            outcomes.append("duplicate")
        except BaseException as error:  # surfaced on the test's thread
            outcomes.append(error)

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


def test_two_simultaneous_staff_creates_of_one_person_make_one_lead(private_engine, monkeypatch):
    caller = make_caller()
    actor = _actor(caller)
    outcomes = _race(private_engine, monkeypatch, lambda uow: create_lead(uow, actor, NewLead(**ADA)))
    assert sorted(map(str, outcomes)) == ["created", "duplicate"]
    assert lead_count(caller.org_id) == 1


def test_two_simultaneous_creates_sharing_only_a_phone_make_one_lead(private_engine, monkeypatch):
    caller = make_caller()
    actor = _actor(caller)
    bodies = iter(
        [NewLead(email="a@example.com", phone="050-1234567"), NewLead(email="b@example.com", phone="0501234567")]
    )
    lock = threading.Lock()

    def work(uow):
        with lock:
            new = next(bodies)
        create_lead(uow, actor, new)

    outcomes = _race(private_engine, monkeypatch, work)
    assert sorted(map(str, outcomes)) == ["created", "duplicate"]
    assert lead_count(caller.org_id) == 1


def test_two_simultaneous_identical_public_submissions_make_one_lead_and_one_resubmission(private_engine, monkeypatch):
    caller = make_caller()
    submission = PublicSubmission(received={"email": "ada@example.com"}, email="ada@example.com")
    outcomes = _race(private_engine, monkeypatch, lambda uow: capture_lead(uow, caller.org_id, submission))
    assert outcomes == ["created", "created"]  # the public path swallows the duplicate
    assert lead_count(caller.org_id) == 1
    [lead] = lead_rows(caller.org_id)
    assert sorted(r["duplicate"] for r in receipts_of(caller.org_id)) == [False, True]
    assert {r["lead_id"] for r in receipts_of(caller.org_id)} == {lead["id"]}


def test_the_same_phone_typed_another_way_is_the_same_person_in_the_organizations_region():
    from sqlalchemy import update

    from leadcrm.directory.tables import organizations
    from leadcrm.platform.db.engine import get_engine

    caller = make_caller()
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == caller.org_id).values(country_code="IL"))
    first = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Noa", "phone": "050-123-4567"})

    second = call_api(
        "POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Noa", "phone": "+972 50 123 4567"}
    )

    assert second.status == 409
    assert second.body["error"]["existingLeadId"] == first.data["id"]


def test_numbers_sharing_only_their_last_seven_digits_are_different_people():
    from sqlalchemy import update

    from leadcrm.directory.tables import organizations
    from leadcrm.platform.db.engine import get_engine

    caller = make_caller()
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == caller.org_id).values(country_code="IL"))
    call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Noa", "phone": "050-123-4567"})

    other = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Noa", "phone": "052-123-4567"})

    assert other.status == 201
