"""`membership.join_released` (platform detail {organizationId, userId, membershipId?, releasedAt?}), consumed
by task_lifecycle: a released join is a recovered signup, not a cold lead. The person's lead (matched on the
person, never a bare field) is reopened, or a lead is created; either carries `recoveredSignup: true` on its
lead.status_changed / lead.created. Change-detecting and idempotent: a replay changes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import update

from leadcrm.directory.tables import organizations
from leadcrm.leads.rules.returning import JOIN_RELEASED_NOTE
from leadcrm.leads.tables import leads
from leadcrm.platform.db.engine import get_engine
from tests.support.capture_helpers import receipts_of
from tests.support.events import eventbridge_envelope, sqs_event, sqs_record
from tests.support.factories import make_caller, make_organization
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

JOIN_RELEASED = "membership.join_released"


@pytest.fixture
def dana_email() -> str:
    """An account user's email is unique on the platform: each test gets an address of its own."""
    return f"dana.{uuid.uuid4().hex[:10]}@example.com"


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def sales(owner):
    return default_pipeline(owner.org_id)


def _release(task_lifecycle, org_id, user_id, **extra) -> dict:
    """One platform event as task_lifecycle receives it: an SQS record whose body is the EventBridge event."""
    detail = {"organizationId": str(org_id), "userId": str(user_id), **extra}
    envelope = eventbridge_envelope(JOIN_RELEASED, detail, source="platform.local")
    result = task_lifecycle(sqs_event(sqs_record(envelope, queue_name="leadcrm-task-lifecycle")))
    assert result == {"batchItemFailures": []}
    return result


# --- reopen ------------------------------------------------------------------------------------------------------


def test_a_released_join_reopens_the_persons_lost_lead_as_a_recovered_signup(task_lifecycle, owner, sales, dana_email):
    dana = make_person(email=dana_email)
    lead_id = insert_lead(owner.org_id, sales, "lost", name="Dana", email=dana_email.title(), note="Too busy.")
    _release(task_lifecycle, owner.org_id, dana, membershipId=str(uuid.uuid4()))
    lead = lead_state(lead_id)
    assert (lead["status"], lead["returned_via"], lead["return_count"]) == ("new", "join_released", 1)
    assert lead["note"] == f"Too busy.\n{JOIN_RELEASED_NOTE}"
    [changed] = outbox_of(lead_id, "lead.status_changed")
    assert changed["payload"]["recoveredSignup"] is True
    assert (changed["payload"]["fromStatus"], changed["payload"]["toStatus"]) == ("lost", "new")
    [returned] = outbox_of(lead_id, "lead.returned")
    assert returned["payload"]["recoveredSignup"] is True
    [entry] = timeline_of(lead_id, "lead_returned")
    assert (entry["payload"]["via"], entry["payload"]["recoveredSignup"]) == ("join_released", True)


def test_the_release_is_on_the_leads_timeline_with_what_the_platform_sent(task_lifecycle, owner, sales, dana_email):
    dana, membership = make_person(email=dana_email), uuid.uuid4()
    lead_id = insert_lead(owner.org_id, sales, "frozen", email=dana_email)
    _release(task_lifecycle, owner.org_id, dana, membershipId=str(membership), releasedAt="2026-11-29T10:00:00Z")
    [entry] = timeline_of(lead_id, "signup_released")
    assert entry["payload"] == {
        "userId": str(dana),
        "membershipId": str(membership),
        "releasedAt": "2026-11-29T10:00:00+00:00",
        "outcome": "to_new_stage",
    }


def test_a_phone_match_with_agreeing_names_is_the_same_person(task_lifecycle, owner, sales):
    dana = make_person(phone="+972 50-123-4567", first_name="Dana", last_name="Cohen")
    lead_id = insert_lead(owner.org_id, sales, "lost", name="Dana", phone="+972501234567")
    _release(task_lifecycle, owner.org_id, dana)
    assert lead_state(lead_id)["status"] == "new"


def test_an_unowned_reopened_lead_goes_to_the_default_assignee(task_lifecycle, owner, sales, dana_email):
    dana = make_person(email=dana_email)
    lead_id = insert_lead(owner.org_id, sales, "lost", email=dana_email)
    _release(task_lifecycle, owner.org_id, dana)
    assert lead_state(lead_id)["assigned_to_user_id"] == owner.user.id
    [event] = status_events_of(lead_id)
    assert event["actor_user_id"] is None


# --- create ------------------------------------------------------------------------------------------------------


def test_a_released_join_without_a_lead_creates_one_marked_as_a_recovered_signup(
    task_lifecycle, owner, sales, dana_email
):
    dana = make_person(email=dana_email.title(), phone="+972 50 123 4567")
    membership = uuid.uuid4()
    _release(task_lifecycle, owner.org_id, dana, membershipId=str(membership))
    [lead] = leads_of(owner.org_id)
    assert (lead["name"], lead["email"], lead["phone"]) == ("Dana Cohen", dana_email, "+972501234567")
    assert (lead["source"], lead["status"], lead["stage_id"]) == ("self_signup", "new", sales.stage("new"))
    assert lead["note"] == JOIN_RELEASED_NOTE
    [created] = outbox_of(lead["id"], "lead.created")
    assert created["payload"]["recoveredSignup"] is True
    [receipt] = receipts_of(owner.org_id)
    assert (receipt["channel"], receipt["payload"]["membershipId"]) == ("join_released", str(membership))
    [entry] = timeline_of(lead["id"], "signup_released")
    assert entry["payload"]["outcome"] == "created"


def test_a_shared_phone_with_another_name_is_not_that_persons_lead(task_lifecycle, owner, sales):
    """The family phone: Dana's release does not reopen her mother's lost lead; Dana gets a lead of her own."""
    dana = make_person(phone="+972501234567", first_name="Dana", last_name="Cohen")
    mother = insert_lead(owner.org_id, sales, "lost", name="Miriam Cohen", phone="+972 50 123 4567")
    _release(task_lifecycle, owner.org_id, dana)
    assert lead_state(mother)["status"] == "lost"
    assert sorted(lead["name"] for lead in leads_of(owner.org_id)) == ["Dana Cohen", "Miriam Cohen"]


# --- change-detecting and idempotent ---------------------------------------------------------------------------------


def test_a_replayed_release_changes_nothing_the_second_time(task_lifecycle, owner, sales, dana_email):
    dana, membership = make_person(email=dana_email), str(uuid.uuid4())
    lead_id = insert_lead(owner.org_id, sales, "lost", email=dana_email)
    _release(task_lifecycle, owner.org_id, dana, membershipId=membership)
    after_first = lead_state(lead_id)
    _release(task_lifecycle, owner.org_id, dana, membershipId=membership)
    assert lead_state(lead_id) == after_first
    assert len(status_events_of(lead_id)) == 1
    assert len(timeline_of(lead_id, "lead_returned")) == len(timeline_of(lead_id, "signup_released")) == 1
    assert len(outbox_of(lead_id, "lead.status_changed")) == 1


def test_a_replay_creates_no_second_lead_even_when_the_person_match_cannot_find_it_again(task_lifecycle, owner, sales):
    """A phone shared with a differently-named lead vetoes every phone match, so the lead the first delivery
    created cannot be found by person again: the release's key is what makes the replay a no-op."""
    dana = make_person(phone="+972501234567", first_name="Dana", last_name="Cohen")
    insert_lead(owner.org_id, sales, "new", name="Miriam Cohen", phone="+972501234567")
    membership = str(uuid.uuid4())
    _release(task_lifecycle, owner.org_id, dana, membershipId=membership)
    _release(task_lifecycle, owner.org_id, dana, membershipId=membership)
    assert sorted(lead["name"] for lead in leads_of(owner.org_id)) == ["Dana Cohen", "Miriam Cohen"]


def test_a_lead_already_in_the_target_stage_records_no_status_event_and_no_repeated_sentence(
    task_lifecycle, owner, sales, dana_email
):
    dana = make_person(email=dana_email)
    note = f"Came to the open day. {JOIN_RELEASED_NOTE}"
    lead_id = insert_lead(owner.org_id, sales, "new", email=dana_email, note=note, archived_at=datetime.now(UTC))
    _release(task_lifecycle, owner.org_id, dana)
    lead = lead_state(lead_id)
    assert (lead["archived_at"], lead["status"], lead["note"]) == (None, "new", note)
    assert status_events_of(lead_id) == []
    assert outbox_of(lead_id, "lead.status_changed") == []


def test_a_second_release_after_the_lead_was_lost_again_does_not_repeat_the_sentence(
    task_lifecycle, owner, sales, dana_email
):
    dana = make_person(email=dana_email)
    lead_id = insert_lead(owner.org_id, sales, "lost", email=dana_email, note=None)
    _release(task_lifecycle, owner.org_id, dana, membershipId=str(uuid.uuid4()))
    with get_engine().begin() as conn:
        conn.execute(update(leads).where(leads.c.id == lead_id).values(status="lost", stage_id=sales.stage("lost")))
    _release(task_lifecycle, owner.org_id, dana, membershipId=str(uuid.uuid4()))
    lead = lead_state(lead_id)
    assert (lead["status"], lead["return_count"], lead["note"]) == ("new", 2, JOIN_RELEASED_NOTE)


# --- left alone --------------------------------------------------------------------------------------------------


def test_an_open_lead_is_left_as_it_is_and_the_release_is_noted_on_its_timeline(
    task_lifecycle, owner, sales, dana_email
):
    dana = make_person(email=dana_email)
    lead_id = insert_lead(owner.org_id, sales, "trial_booked", email=dana_email, note="Booked Tuesday")
    before = lead_state(lead_id)
    _release(task_lifecycle, owner.org_id, dana)
    assert lead_state(lead_id) == before
    [entry] = timeline_of(lead_id, "signup_released")
    assert entry["payload"]["outcome"] == "already_open"
    assert outbox_of(lead_id, "lead.status_changed") == []


@pytest.mark.parametrize("category", ["converted", "customer"])
def test_a_won_lead_is_never_reopened(task_lifecycle, owner, sales, category, dana_email):
    dana = make_person(email=dana_email)
    lead_id = insert_lead(owner.org_id, sales, category, email=dana_email)
    _release(task_lifecycle, owner.org_id, dana)
    assert lead_state(lead_id)["status"] == category
    assert timeline_of(lead_id, "lead_returned") == []


def test_a_managed_user_is_nobodys_lead(task_lifecycle, owner, sales, dana_email):
    child = make_person(email=dana_email, kind="managed")
    lead_id = insert_lead(owner.org_id, sales, "lost", email=dana_email)
    _release(task_lifecycle, owner.org_id, child)
    assert lead_state(lead_id)["status"] == "lost"
    assert len(leads_of(owner.org_id)) == 1


def test_a_user_with_no_email_or_phone_is_not_turned_into_a_lead(task_lifecycle, owner):
    _release(task_lifecycle, owner.org_id, make_person(email=None, phone=None))
    assert leads_of(owner.org_id) == []


def test_an_organization_without_lead_management_takes_no_lead(task_lifecycle, dana_email):
    org = make_organization(features={})
    _release(task_lifecycle, org.id, make_person(email=dana_email))
    assert leads_of(org.id) == []


def test_an_unknown_organization_or_user_is_acknowledged_and_dropped(task_lifecycle, owner, dana_email):
    _release(task_lifecycle, uuid.uuid4(), make_person(email=dana_email))
    _release(task_lifecycle, owner.org_id, uuid.uuid4())
    assert leads_of(owner.org_id) == []


@pytest.mark.parametrize(
    "detail", [{}, {"organizationId": "x", "userId": "y"}, {"userId": str(uuid.uuid4())}, {"organizationId": None}]
)
def test_a_malformed_release_is_acknowledged_and_dropped(task_lifecycle, detail):
    envelope = eventbridge_envelope(JOIN_RELEASED, detail, source="platform.local")
    assert task_lifecycle(sqs_event(sqs_record(envelope, queue_name="leadcrm-task-lifecycle"))) == {
        "batchItemFailures": []
    }


def test_phones_are_read_in_the_organizations_region(task_lifecycle, owner, sales):
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == owner.org_id).values(country_code="IL"))
    dana = make_person(phone="050-1234567", first_name="Dana", last_name=None)
    lead_id = insert_lead(owner.org_id, sales, "lost", name="Dana Cohen", phone="+972501234567")
    _release(task_lifecycle, owner.org_id, dana)
    assert lead_state(lead_id)["status"] == "new"
