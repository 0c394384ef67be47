"""G1 public capture `POST /leads/organization/{orgId}`: no auth, one fixed answer, dedup, receipts, the
public-boundary policy (campaignId dropped, campaignRef whitelist, minisite events resolved on the server)."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import func, select

from leadcrm.leads.tables import lead_status_events
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.tables import idempotency_keys, outbox
from tests.support.capture_helpers import (
    activities_of,
    campaigns_of,
    capture,
    lead_count,
    lead_rows,
    make_campaign,
    make_minisite_event,
    minisite_event_row,
    receipts_of,
)
from tests.support.factories import make_caller, make_organization
from tests.support.returning_helpers import close_lead

ADA = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958", "note": "Wants a trial"}
RECEIVED = {"data": {"received": True}}


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """A capture publishes `lead.created` after commit; the bus exists."""


def _same_answer(first, second) -> None:
    """Byte for byte and header for header (the Lambda proxy result API Gateway turns into the response)."""
    assert first.raw == second.raw


# --- the one answer ----------------------------------------------------------------------------------------


def test_a_submission_is_answered_201_received_and_nothing_else():
    org = make_organization()
    response = capture(org.id, ADA)
    assert response.status == 201
    assert response.body == RECEIVED
    assert response.headers["content-type"].startswith("application/json")


def test_a_duplicate_gets_the_same_bytes_and_headers_as_a_new_lead():
    org = make_organization()
    new = capture(org.id, ADA)
    duplicate = capture(org.id, ADA)
    _same_answer(new, duplicate)
    assert lead_count(org.id) == 1


def test_a_duplicate_by_phone_alone_gets_the_same_answer_too():
    org = make_organization()
    new = capture(org.id, {"phone": "050-123 4567"})
    duplicate = capture(org.id, {"name": "Someone", "phone": "0501234567"})
    _same_answer(new, duplicate)
    assert lead_count(org.id) == 1


def test_an_unknown_organization_gets_the_same_answer_and_nothing_is_written():
    org = make_organization()
    known = capture(org.id, ADA)
    unknown_id = uuid.uuid4()
    unknown = capture(unknown_id, ADA)
    _same_answer(known, unknown)
    assert lead_count(unknown_id) == 0
    assert receipts_of(unknown_id) == []


def test_an_organization_id_that_is_not_a_uuid_gets_the_same_answer():
    known = capture(make_organization().id, ADA)
    _same_answer(known, capture("not-an-organization", ADA))


def test_an_organization_without_lead_management_gets_the_same_answer_and_nothing_is_written():
    org = make_organization(features={})
    answer = capture(org.id, ADA, headers={"idempotency-key": "k-1"})
    _same_answer(capture(make_organization().id, ADA), answer)
    assert lead_count(org.id) == 0
    assert receipts_of(org.id) == []
    with get_engine().connect() as conn:
        keys = conn.execute(
            select(func.count()).select_from(idempotency_keys).where(idempotency_keys.c.scope.contains(str(org.id)))
        ).scalar_one()
    assert keys == 0


def test_the_public_route_needs_no_token():
    org = make_organization()
    assert capture(org.id, {"name": "No token"}).status == 201
    assert lead_count(org.id) == 1


# --- what a new submission writes --------------------------------------------------------------------------


def test_a_new_submission_makes_a_new_minisite_lead_on_the_new_stage():
    org = make_organization()
    capture(org.id, ADA)
    [lead] = lead_rows(org.id)
    assert (lead["name"], lead["email"], lead["phone"], lead["note"]) == (
        "Ada Lovelace",
        "ada@example.com",
        "+44 20 7946 0958",
        "Wants a trial",
    )
    assert lead["source"] == "minisite"
    assert lead["status"] == "new"
    assert lead["created_by_user_id"] is None


def test_a_new_lead_from_the_public_path_has_a_status_event_without_an_actor():
    org = make_organization()
    capture(org.id, ADA)
    [lead] = lead_rows(org.id)
    with get_engine().connect() as conn:
        [event] = (
            conn.execute(select(lead_status_events).where(lead_status_events.c.lead_id == lead["id"])).mappings().all()
        )
    assert (event["from_status"], event["to_status"], event["actor_user_id"]) == (None, "new", None)
    assert event["changed_at"] == lead["created_at"]


def test_a_new_lead_from_the_public_path_emits_lead_created_with_source_minisite():
    org = make_organization()
    capture(org.id, ADA)
    [lead] = lead_rows(org.id)
    with get_engine().connect() as conn:
        [row] = conn.execute(select(outbox).where(outbox.c.aggregate_id == lead["id"])).mappings().all()
    assert row["type"] == "lead.created"
    assert row["payload"]["source"] == "minisite"
    assert "ada@example.com" not in json.dumps(row["payload"])


def test_a_new_lead_gets_a_receipt_of_what_was_sent():
    org = make_organization()
    capture(org.id, {**ADA, "campaignRef": "spring-promo"})
    [lead] = lead_rows(org.id)
    [receipt] = receipts_of(org.id)
    assert receipt["lead_id"] == lead["id"]
    assert receipt["channel"] == "minisite"
    assert receipt["duplicate"] is False
    assert receipt["payload"] == {**ADA, "campaignRef": "spring-promo"}


def test_blank_optional_fields_count_as_not_sent():
    org = make_organization()
    response = capture(org.id, {"name": "Ada", "email": "", "phone": " ", "note": ""})
    assert response.status == 201
    [lead] = lead_rows(org.id)
    assert (lead["email"], lead["phone"], lead["note"]) == (None, None, None)


def test_source_is_forced_to_minisite_and_cannot_be_sent():
    org = make_organization()
    response = capture(org.id, {"name": "Ada", "source": "manual"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")
    assert lead_count(org.id) == 0


# --- duplicates --------------------------------------------------------------------------------------------


def test_a_duplicate_makes_no_second_lead_but_a_duplicate_receipt_on_the_existing_one():
    org = make_organization()
    capture(org.id, ADA)
    capture(org.id, {"email": "ADA@example.com", "note": "Still interested!"})
    [lead] = lead_rows(org.id)
    first, again = receipts_of(org.id)
    assert again["lead_id"] == lead["id"]
    assert again["duplicate"] is True
    assert again["payload"] == {"email": "ADA@example.com", "note": "Still interested!"}
    assert first["duplicate"] is False


def test_a_duplicate_leaves_the_existing_lead_as_it_was():
    org = make_organization()
    capture(org.id, ADA)
    [before] = lead_rows(org.id)
    capture(org.id, {"name": "Another Name", "email": "ada@example.com", "note": "Changed"})
    [after] = lead_rows(org.id)
    assert after == before


def test_a_duplicate_is_on_the_existing_leads_timeline_as_resubmitted():
    org = make_organization()
    capture(org.id, ADA)
    capture(org.id, ADA)
    [lead] = lead_rows(org.id)
    [entry] = activities_of(lead["id"], "resubmitted")
    assert entry["payload"]["channel"] == "minisite"
    assert entry["actor_user_id"] is None


def test_the_same_email_in_another_organization_is_a_new_lead_there():
    first, second = make_organization(), make_organization()
    capture(first.id, ADA)
    capture(second.id, ADA)
    assert lead_count(first.id) == lead_count(second.id) == 1


def test_a_submission_matching_a_lost_lead_reopens_it_and_gets_the_same_answer():
    org = make_organization()
    new = capture(org.id, ADA)
    [lead] = lead_rows(org.id)
    close_lead(lead["id"], "lost")
    again = capture(org.id, ADA)
    _same_answer(new, again)
    assert lead_count(org.id) == 1
    assert [r["duplicate"] for r in receipts_of(org.id)] == [False, True]  # the person's words are kept
    assert lead_rows(org.id)[0]["status"] == "new"


# --- Idempotency-Key ---------------------------------------------------------------------------------------


def test_a_replayed_idempotency_key_answers_the_same_and_creates_nothing_new():
    org = make_organization()
    first = capture(org.id, ADA, headers={"idempotency-key": "form-submit-1"})
    again = capture(org.id, ADA, headers={"idempotency-key": "form-submit-1"})
    _same_answer(first, again)
    assert lead_count(org.id) == 1
    assert len(receipts_of(org.id)) == 1  # a replay is not a resubmission


def test_the_same_idempotency_key_in_another_organization_is_independent():
    first, second = make_organization(), make_organization()
    capture(first.id, ADA, headers={"idempotency-key": "shared-key"})
    capture(second.id, ADA, headers={"idempotency-key": "shared-key"})
    assert lead_count(second.id) == 1


def test_an_idempotency_key_reused_with_another_body_is_a_422():
    org = make_organization()
    capture(org.id, ADA, headers={"idempotency-key": "form-submit-2"})
    response = capture(org.id, {"name": "Grace Hopper"}, headers={"idempotency-key": "form-submit-2"})
    assert (response.status, response.error_code) == (422, "IDEMPOTENCY_KEY_REUSED")
    assert lead_count(org.id) == 1


def test_an_oversized_idempotency_key_is_a_400_for_every_organization():
    for org_id in (make_organization().id, uuid.uuid4()):
        response = capture(org_id, ADA, headers={"idempotency-key": "k" * 256})
        assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


# --- campaignId, campaignRef -------------------------------------------------------------------------------


def test_a_campaign_id_is_accepted_and_always_dropped():
    org = make_organization()
    campaign_id = make_campaign(org.id)
    response = capture(org.id, {**ADA, "campaignId": str(campaign_id)})
    assert response.status == 201
    [lead] = lead_rows(org.id)
    assert lead["campaign_id"] is None


@pytest.mark.parametrize("ref", ["lead-popup", "contact-form"])
def test_a_minisite_surface_ref_attributes_the_lead_to_its_hook(ref):
    org = make_organization()
    capture(org.id, {**ADA, "campaignRef": ref})
    [lead] = lead_rows(org.id)
    [hook] = campaigns_of(org.id)
    assert lead["campaign_id"] == hook["id"]
    assert (hook["channel"], hook["external_ref"]) == ("minisite", ref)


def test_the_same_surface_ref_reuses_one_hook():
    org = make_organization()
    capture(org.id, {"email": "a@example.com", "campaignRef": "lead-popup"})
    capture(org.id, {"email": "b@example.com", "campaignRef": "lead-popup"})
    assert len(campaigns_of(org.id)) == 1
    assert len({lead["campaign_id"] for lead in lead_rows(org.id)}) == 1


@pytest.mark.parametrize("ref", ["spring-promo", "LEAD-POPUP", "manual"])
def test_any_other_campaign_ref_is_dropped_and_mints_nothing_but_the_lead_is_received(ref):
    org = make_organization()
    response = capture(org.id, {**ADA, "campaignRef": ref})
    assert response.body == RECEIVED
    [lead] = lead_rows(org.id)
    assert lead["campaign_id"] is None
    assert campaigns_of(org.id) == []


def test_an_oversized_campaign_ref_is_a_400():
    org = make_organization()
    response = capture(org.id, {**ADA, "campaignRef": "x" * 65})
    assert response.status == 400
    assert lead_count(org.id) == 0


# --- minisite events ---------------------------------------------------------------------------------------


def test_an_event_of_the_organization_gets_its_own_hook_stored_on_the_event():
    org = make_organization()
    event_id = make_minisite_event(org.id, title="Summer open day")
    capture(org.id, {**ADA, "minisiteEventId": str(event_id)})
    [lead] = lead_rows(org.id)
    [hook] = campaigns_of(org.id)
    assert (hook["channel"], hook["external_ref"], hook["name"]) == ("minisite_event", str(event_id), "Summer open day")
    assert lead["campaign_id"] == hook["id"]
    assert minisite_event_row(event_id)["campaign_id"] == hook["id"]


def test_the_next_submission_for_the_event_reuses_its_hook():
    org = make_organization()
    event_id = make_minisite_event(org.id)
    capture(org.id, {"email": "a@example.com", "minisiteEventId": str(event_id)})
    capture(org.id, {"email": "b@example.com", "minisiteEventId": str(event_id)})
    assert len(campaigns_of(org.id)) == 1
    assert len({lead["campaign_id"] for lead in lead_rows(org.id)}) == 1


def test_an_event_with_a_campaign_attributes_to_that_campaign():
    org = make_organization()
    campaign_id = make_campaign(org.id, name="Open day ads")
    event_id = make_minisite_event(org.id, campaign_id=campaign_id)
    capture(org.id, {**ADA, "minisiteEventId": str(event_id)})
    [lead] = lead_rows(org.id)
    assert lead["campaign_id"] == campaign_id
    assert len(campaigns_of(org.id)) == 1


def test_the_event_wins_over_a_surface_ref():
    org = make_organization()
    event_id = make_minisite_event(org.id)
    capture(org.id, {**ADA, "minisiteEventId": str(event_id), "campaignRef": "lead-popup"})
    [lead] = lead_rows(org.id)
    [hook] = campaigns_of(org.id)
    assert hook["channel"] == "minisite_event"
    assert lead["campaign_id"] == hook["id"]


def test_another_organizations_event_is_ignored_silently_and_left_untouched():
    org, elsewhere = make_organization(), make_organization()
    foreign_event = make_minisite_event(elsewhere.id)
    response = capture(org.id, {**ADA, "minisiteEventId": str(foreign_event)})
    _same_answer(response, capture(org.id, {"email": "grace@example.com"}))
    [lead, _] = lead_rows(org.id)
    assert lead["campaign_id"] is None
    assert campaigns_of(org.id) == campaigns_of(elsewhere.id) == []
    assert minisite_event_row(foreign_event)["campaign_id"] is None


def test_another_organizations_event_falls_back_to_the_surface_ref():
    org, elsewhere = make_organization(), make_organization()
    foreign_event = make_minisite_event(elsewhere.id)
    capture(org.id, {**ADA, "minisiteEventId": str(foreign_event), "campaignRef": "contact-form"})
    [hook] = campaigns_of(org.id)
    assert (hook["channel"], hook["external_ref"]) == ("minisite", "contact-form")


def test_an_event_id_that_does_not_exist_is_ignored():
    org = make_organization()
    assert capture(org.id, {**ADA, "minisiteEventId": str(uuid.uuid4())}).body == RECEIVED
    [lead] = lead_rows(org.id)
    assert lead["campaign_id"] is None


def test_an_event_id_that_is_not_a_uuid_is_a_400():
    org = make_organization()
    response = capture(org.id, {**ADA, "minisiteEventId": "open-day"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


# --- bad input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"note": "no one to contact"},
        {"email": "not-an-email"},
        {"name": "Ada", "shoeSize": 42},
        {"name": "Ada", "isTest": True},
        {"name": "Ada", "assigneeUserId": str(uuid.uuid4())},
        {"name": "A" * 201},
        {"name": "Ada", "note": "x" * 5001},
        {"name": "Ada", "phone": "call me maybe"},
        {"name": "Ada\u0000Lovelace"},
        {"name": 42},
        [ADA],
        "just text",
    ],
    ids=[
        "empty",
        "nobody-to-contact",
        "bad-email",
        "unknown-field",
        "is-test",
        "assignee",
        "long-name",
        "long-note",
        "bad-phone",
        "nul",
        "number-name",
        "array",
        "string",
    ],
)
def test_bad_input_is_a_400_and_writes_nothing(body):
    org = make_organization()
    response = capture(org.id, body)
    assert response.status == 400
    assert response.error_code in {"VALIDATION_FAILED", "MALFORMED_JSON"}
    assert lead_count(org.id) == 0


def test_malformed_json_is_a_400():
    org = make_organization()
    response = capture(org.id, '{"name": "Ada"')
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")


def test_a_staff_caller_posting_here_gets_a_minisite_lead_like_anyone():
    caller = make_caller(role="owner")
    assert capture(caller.org_id, {"name": "Walk in"}).status == 201
    [lead] = lead_rows(caller.org_id)
    assert lead["source"] == "minisite"
    assert lead["created_by_user_id"] is None
