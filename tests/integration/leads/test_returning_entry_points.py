"""The entry points (spec "Returning leads" → "Entry points"): a dedup match on a closed lead (lost, frozen or
archived) through the public capture or the staff create reopens it instead of reporting a duplicate. Open
and won matches stay duplicates. The CSV import, PATCH and the bulk stage move are not entry points."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from leadcrm.leads.intake import DuplicateLead, NewLead, intake_lead
from leadcrm.platform.db.uow import UnitOfWork
from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import (
    activities_of,
    campaigns_of,
    capture,
    lead_count,
    make_campaign,
    receipts_of,
)
from tests.support.factories import make_caller, make_organization
from tests.support.lead_moves_helpers import default_pipeline, patch_lead
from tests.support.returning_helpers import insert_lead, lead_state, outbox_of, status_events_of, timeline_of

ADA = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958"}


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creates and reopens publish after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def sales(owner):
    return default_pipeline(owner.org_id)


def _staff_create(caller, body, **kwargs):
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body, **kwargs)


# --- public capture (G1) -----------------------------------------------------------------------------------------


def test_a_submission_matching_a_lost_lead_reopens_it_with_the_same_answer_as_a_new_lead(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    fresh = capture(make_organization().id, {**ADA, "note": "Wants a trial"})
    returned = capture(owner.org_id, {**ADA, "note": "Wants a trial"})
    assert returned.raw == fresh.raw  # no enumeration oracle: a reopen answers like anything else
    assert lead_count(owner.org_id) == 1
    lead = lead_state(lead_id)
    assert (lead["status"], lead["returned_via"], lead["return_count"]) == ("new", "public_capture", 1)
    [entry] = timeline_of(lead_id, "lead_returned")
    assert (entry["payload"]["fromStatus"], entry["payload"]["note"]) == ("lost", "Wants a trial")
    assert entry["actor_user_id"] is None


def test_a_reopen_keeps_the_submission_on_a_receipt_and_is_not_a_resubmission(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "frozen", email="ada@example.com")
    capture(owner.org_id, {**ADA, "note": "Back from abroad"})
    [receipt] = receipts_of(owner.org_id)
    assert (receipt["lead_id"], receipt["channel"], receipt["duplicate"]) == (lead_id, "minisite", True)
    assert receipt["payload"]["note"] == "Back from abroad"
    assert activities_of(lead_id, "resubmitted") == []


def test_a_submission_matching_an_archived_open_lead_unarchives_it_in_place(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "trial_booked", email="ada@example.com", archived_at=datetime.now(UTC))
    capture(owner.org_id, ADA)
    lead = lead_state(lead_id)
    assert (lead["archived_at"], lead["status"], lead["returned_via"]) == (None, "trial_booked", "public_capture")


def test_a_submission_matching_an_open_lead_is_still_a_resubmission(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "contacted", email="ada@example.com")
    capture(owner.org_id, ADA)
    assert len(activities_of(lead_id, "resubmitted")) == 1
    assert timeline_of(lead_id, "lead_returned") == []
    assert lead_state(lead_id)["return_count"] == 0


@pytest.mark.parametrize("category", ["converted", "customer"])
def test_a_submission_matching_a_won_lead_is_a_resubmission_and_reopens_nothing(owner, sales, category):
    lead_id = insert_lead(owner.org_id, sales, category, email="ada@example.com")
    capture(owner.org_id, ADA)
    assert lead_state(lead_id)["status"] == category
    assert len(activities_of(lead_id, "resubmitted")) == 1
    assert timeline_of(lead_id, "lead_returned") == []


def test_a_reopen_by_phone_fills_the_email_the_lead_did_not_have(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", email=None, phone="020 7946 0958")
    capture(owner.org_id, {"name": "Ada", "email": "ada@example.com", "phone": "020-7946-0958"})
    lead = lead_state(lead_id)
    assert (lead["email"], lead["name"], lead["phone"]) == ("ada@example.com", "Ada Lovelace", "020 7946 0958")


def test_a_reopened_lead_without_a_campaign_takes_the_surfaces_campaign(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    capture(owner.org_id, {**ADA, "campaignRef": "lead-popup"})
    [hook] = campaigns_of(owner.org_id)
    assert lead_state(lead_id)["campaign_id"] == hook["id"]


def test_an_unowned_lead_reopened_by_the_public_goes_to_the_organizations_owner(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    capture(owner.org_id, ADA)
    assert lead_state(lead_id)["assigned_to_user_id"] == owner.user.id


# --- staff create (G2) ---------------------------------------------------------------------------------------------


def test_a_staff_create_matching_a_closed_lead_answers_200_with_the_reopened_lead(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    response = _staff_create(owner, {**ADA, "note": "Met at the open day"})
    assert response.status == 200
    assert set(response.body) == {"data", "meta"}
    assert response.body["meta"] == {"outcome": "reopened"}
    assert response.data["id"] == str(lead_id)
    assert (response.data["status"], response.data["nextActionType"]) == ("new", "call")
    assert lead_count(owner.org_id) == 1


def test_a_new_lead_is_still_201_with_the_lead_alone(owner):
    response = _staff_create(owner, ADA)
    assert (response.status, set(response.body)) == (201, {"data"})


def test_a_staff_reopen_by_create_records_the_staff_member_and_gives_them_the_unowned_lead(owner, sales):
    coach = make_caller(role="coach", organization=owner.organization)
    lead_id = insert_lead(owner.org_id, sales, "frozen", email="ada@example.com")
    _staff_create(coach, ADA)
    [event] = status_events_of(lead_id)
    assert event["actor_user_id"] == coach.user.id
    lead = lead_state(lead_id)
    assert (lead["assigned_to_user_id"], lead["returned_via"]) == (coach.user.id, "staff_create")
    [receipt] = receipts_of(owner.org_id)
    assert (receipt["channel"], receipt["duplicate"]) == ("staff", True)


def test_the_assignee_chosen_on_create_takes_the_unowned_reopened_lead(owner, sales):
    coach = make_caller(role="coach", organization=owner.organization)
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    _staff_create(owner, {**ADA, "assigneeUserId": str(coach.user.id)})
    assert lead_state(lead_id)["assigned_to_user_id"] == coach.user.id
    assert len(timeline_of(lead_id, "owner_changed")) == 1


def test_the_campaign_chosen_on_create_is_set_only_when_the_reopened_lead_has_none(owner, sales):
    first, chosen = make_campaign(owner.org_id, name="First"), make_campaign(owner.org_id, name="Chosen")
    with_one = insert_lead(owner.org_id, sales, "lost", email="ada@example.com", campaign_id=first)
    without = insert_lead(owner.org_id, sales, "lost", email="grace@example.com")
    _staff_create(owner, {**ADA, "campaignId": str(chosen)})
    _staff_create(owner, {"email": "grace@example.com", "campaignId": str(chosen)})
    assert (lead_state(with_one)["campaign_id"], lead_state(without)["campaign_id"]) == (first, chosen)


def test_a_staff_create_matching_an_open_lead_is_still_a_409(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "callback", email="ada@example.com")
    response = _staff_create(owner, ADA)
    assert (response.status, response.error_code) == (409, "DUPLICATE_LEAD")
    assert response.body["error"]["existingLeadId"] == str(lead_id)


@pytest.mark.parametrize("category", ["converted", "customer"])
def test_a_staff_create_matching_a_won_lead_is_a_409_and_reopens_nothing(owner, sales, category):
    lead_id = insert_lead(owner.org_id, sales, category, email="ada@example.com", archived_at=datetime.now(UTC))
    response = _staff_create(owner, ADA)
    assert (response.status, response.error_code) == (409, "DUPLICATE_LEAD")
    assert lead_state(lead_id)["archived_at"] is not None


def test_a_replayed_create_that_reopened_answers_the_same_200_and_reopens_nothing_more(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    key = str(uuid.uuid4())
    first = _staff_create(owner, ADA, headers={"idempotency-key": key})
    again = _staff_create(owner, ADA, headers={"idempotency-key": key})
    assert first.status == again.status == 200
    assert again.body == first.body
    assert again.headers.get("idempotent-replayed") == "true"
    assert lead_state(lead_id)["return_count"] == 1


# --- not entry points ----------------------------------------------------------------------------------------------


def test_the_csv_import_path_reports_a_closed_lead_as_a_duplicate(owner, sales):
    """intake_lead without `via` (how the CSV import calls it): re-importing an old export reopens nothing."""
    lead_id = insert_lead(owner.org_id, sales, "lost", email="ada@example.com")
    with UnitOfWork() as uow, pytest.raises(DuplicateLead):
        intake_lead(
            uow, owner.org_id, NewLead(email="ada@example.com"), actor_user_id=None, channel="import", received={}
        )
    assert lead_state(lead_id)["status"] == "lost"


def test_a_bulk_move_of_a_lost_lead_to_new_is_a_plain_move_without_the_return_marker(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    response = call_api(
        "POST",
        f"{leads_path(owner.org_id)}/bulk-move-stage",
        sub=owner.sub,
        body={"stageId": str(sales.stage("new")), "leadIds": [str(lead_id)]},
    )
    assert response.status == 200, response.body
    lead = lead_state(lead_id)
    assert (lead["status"], lead["return_count"], lead["returned_at"]) == ("new", 0, None)
    assert timeline_of(lead_id, "lead_returned") == []
    assert "returned" not in outbox_of(lead_id, "lead.status_changed")[0]["payload"]


def test_a_patch_of_a_lost_lead_to_new_is_a_plain_move_without_the_return_marker(owner, sales):
    lead_id = insert_lead(owner.org_id, sales, "lost")
    assert patch_lead(owner, lead_id, {"status": "new"}).status == 200
    lead = lead_state(lead_id)
    assert (lead["status"], lead["return_count"]) == ("new", 0)
    assert timeline_of(lead_id, "lead_returned") == []
