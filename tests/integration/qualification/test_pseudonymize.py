"""Pseudonymized erasure (spec 8 "Customer requests data deletion"): the person's details are gone from every
table (the same information_schema-driven scan as the hard erase), the record stays for analytics in
non-identifiable form, and dedup still recognizes the person by keyed tokens."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select

from leadcrm.ingestion.webhook_leads import Outcome, WebhookLead, ingest
from leadcrm.leads import pseudonym_tokens
from leadcrm.leads.intake import NewLead
from leadcrm.leads.rules.returning import ReturnVia
from leadcrm.leads.tables import lead_pseudonyms, lead_receipts, leads
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import capture
from tests.support.deals_helpers import deal_row, open_deal
from tests.support.erase_helpers import make_task, outbox_rows, tables_containing
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import lead_row
from tests.support.qualification_helpers import create_model, enrich, merge, new_lead, put_criteria, undo
from tests.support.tickets_helpers import open_ticket

KEY = "test-pseudonym-key"


@pytest.fixture(autouse=True)
def pseudonym_key(monkeypatch):
    monkeypatch.delenv("PSEUDONYM_SECRET_ARN", raising=False)
    monkeypatch.setenv("PSEUDONYM_KEY", KEY)
    pseudonym_tokens.forget()
    yield
    pseudonym_tokens.forget()


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _person() -> dict[str, str]:
    tag = uuid.uuid4().hex[:10]
    digits = str(uuid.uuid4().int)[:7]
    return {
        "name": f"Quillon Zephyrdale{tag}",
        "email": f"qz.{tag}@example.com",
        "phone": f"+1 555 {digits}",
        "digits": f"1555{digits}",
        "evidence": f"Budget of {tag} confirmed",
    }


def _pseudonymize(caller, lead_id):
    return call_api("POST", leads_path(caller.org_id, lead_id) + "/pseudonymize", sub=caller.sub)


def _lead_with_history(owner, person) -> str:
    """Captured (receipt, capture key), corrected, enriched, BANT evidence, a task naming the person, a
    duplicate merged into it (the merge snapshot keeps the duplicate's details), a staff create replayed."""
    capture(
        owner.org_id,
        {"name": person["name"], "email": person["email"], "phone": person["phone"]},
        headers={"Idempotency-Key": f"capture-{person['digits']}"},
    )
    (lead,) = call_api("GET", leads_path(owner.org_id), sub=owner.sub, query={"search": person["email"]}).data
    lead_id = lead["id"]
    call_api("PATCH", leads_path(owner.org_id, lead_id), sub=owner.sub, body={"note": f"Call {person['name']}"})
    enrich(owner, lead_id, "jobTitle", f"Head coach at {person['name']}", category="demographic")
    put_criteria(owner, lead_id, {"budget": {"status": "met", "evidence": person["evidence"]}})
    make_task(owner.org_id, lead_id=lead_id, task_type="general", title=f"Send {person['name']} the price list")
    duplicate = call_api(
        "POST",
        leads_path(owner.org_id),
        sub=owner.sub,
        body={"name": f"{person['name']} dup", "email": f"dup.{person['email']}"},
        headers={"Idempotency-Key": f"staff-{person['digits']}"},
    ).data
    assert merge(owner, lead_id, duplicate["id"]).status == 200
    return lead_id


def test_before_pseudonymizing_the_scan_finds_the_person(owner):
    person = _person()
    _lead_with_history(owner, person)
    found = tables_containing(person["name"], person["email"], person["evidence"])
    assert "lead_merges.snapshot" in found[person["name"]]
    assert "leads.qualification_criteria" in found[person["evidence"]]
    assert "lead_enrichments.value" in found[person["name"]]


def test_no_table_keeps_the_pseudonymized_persons_details(owner):
    person = _person()
    lead_id = _lead_with_history(owner, person)

    response = _pseudonymize(owner, lead_id)

    assert response.status == 200, response.body
    needles = (person["name"], person["email"], person["phone"], person["digits"], person["evidence"])
    assert tables_containing(*needles) == {}


def test_the_record_stays_for_analytics_in_non_identifiable_form(owner):
    person = _person()
    lead_id = _lead_with_history(owner, person)
    before = lead_row(lead_id)

    _pseudonymize(owner, lead_id)

    after = lead_row(lead_id)
    assert (after["name"], after["email"], after["phone"], after["note"]) == (None, None, None, None)
    assert (after["status"], after["source"], after["campaign_id"], after["created_at"]) == (
        before["status"],
        before["source"],
        before["campaign_id"],
        before["created_at"],
    )
    assert after["archived_at"] is not None  # out of the queue and the default list
    assert after["qualification_criteria"]["budget"]["status"] == "met"
    with get_engine().connect() as conn:
        receipts = conn.execute(select(func.count()).where(lead_receipts.c.lead_id == uuid.UUID(lead_id))).scalar()
    assert receipts >= 1  # when and how the lead came stays; what was sent does not


def test_the_tokens_are_keyed_hashes_of_the_canonical_email_and_phone(owner):
    from leadcrm.leads.rules.pseudonyms import tokens_for

    person = _person()
    lead = new_lead(owner, name=person["name"], email=person["email"].upper(), phone=person["phone"])

    _pseudonymize(owner, lead["id"])

    with get_engine().connect() as conn:
        row = conn.execute(select(lead_pseudonyms).where(lead_pseudonyms.c.lead_id == uuid.UUID(lead["id"]))).one()
    expected = tokens_for(KEY.encode(), owner.org_id, person["email"], person["phone"], region=None)
    assert (row.email_token, row.phone_token) == (expected.email, expected.phone)


def test_dedup_still_recognizes_the_person_in_a_staff_create(owner):
    person = _person()
    lead = new_lead(owner, name=person["name"], email=person["email"])
    _pseudonymize(owner, lead["id"])

    again = call_api("POST", leads_path(owner.org_id), sub=owner.sub, body={"name": "X", "email": person["email"]})

    assert (again.status, again.error_code) == (409, "DUPLICATE_LEAD")
    assert again.body["error"]["existingLeadId"] == lead["id"]
    assert again.body["error"]["existingLeadName"] is None


def test_a_public_submission_of_a_pseudonymized_person_is_suppressed(owner):
    person = _person()
    lead = new_lead(owner, name=person["name"], phone=person["phone"])
    _pseudonymize(owner, lead["id"])

    response = capture(owner.org_id, {"name": person["name"], "phone": person["phone"]})

    assert response.status == 201  # the same answer as always: no oracle
    assert tables_containing(person["name"], person["digits"]) == {}
    with get_engine().connect() as conn:
        count = conn.execute(select(func.count()).where(leads.c.organization_id == owner.org_id)).scalar()
    assert count == 1


def test_another_organization_does_not_recognize_the_person(owner):
    other = make_caller(role="owner")
    person = _person()
    lead = new_lead(owner, name=person["name"], email=person["email"])
    _pseudonymize(owner, lead["id"])

    assert new_lead(other, name=person["name"], email=person["email"])["id"] != lead["id"]


def test_a_lead_is_pseudonymized_once(owner):
    lead = new_lead(owner, name="Dana", email="dana.once@example.com")
    assert _pseudonymize(owner, lead["id"]).status == 200
    again = _pseudonymize(owner, lead["id"])
    assert (again.status, again.error_code) == (409, "ALREADY_PSEUDONYMIZED")


def test_a_merge_of_a_pseudonymized_survivor_cannot_be_undone_and_it_is_never_merged(owner):
    survivor, duplicate = new_lead(owner, name="A"), new_lead(owner, name="B")
    merge_id = merge(owner, survivor["id"], duplicate["id"]).data["mergeId"]
    other = new_lead(owner, name="C")
    _pseudonymize(owner, survivor["id"])

    refused = undo(owner, merge_id)
    assert (refused.status, refused.error_code) == (409, "MERGE_SNAPSHOT_GONE")
    blocked = merge(owner, other["id"], survivor["id"])
    assert (blocked.status, blocked.error_code) == (409, "LEAD_PSEUDONYMIZED")


def test_only_an_owner_or_admin_pseudonymizes():
    coach = make_caller(role="coach")
    lead = new_lead(coach, name="Dana")
    response = _pseudonymize(coach, lead["id"])
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")


def test_without_a_key_pseudonymization_is_refused_and_nothing_changes(owner, monkeypatch):
    monkeypatch.delenv("PSEUDONYM_KEY")
    pseudonym_tokens.forget()
    lead = new_lead(owner, name="Dana", email="dana.nokey@example.com")

    response = _pseudonymize(owner, lead["id"])

    assert (response.status, response.error_code) == (503, "PSEUDONYMIZATION_NOT_CONFIGURED")
    assert lead_row(lead["id"])["email"] == "dana.nokey@example.com"


def test_the_key_is_read_from_secrets_manager(owner, monkeypatch):
    import boto3

    arn = boto3.client("secretsmanager").create_secret(Name="pseudonym-key", SecretString=KEY)["ARN"]
    monkeypatch.delenv("PSEUDONYM_KEY")
    monkeypatch.setenv("PSEUDONYM_SECRET_ARN", arn)
    pseudonym_tokens.forget()

    assert pseudonym_tokens.master_key() == KEY.encode()


def test_the_event_carries_ids_only(owner):
    person = _person()
    lead = new_lead(owner, name=person["name"], email=person["email"])
    _pseudonymize(owner, lead["id"])
    (event,) = outbox_rows(lead["id"], "lead.pseudonymized")
    assert set(event["payload"]) == {"leadId", "actorUserId"}


def test_scoring_still_works_on_a_pseudonymized_lead(owner):
    create_model(owner, [{"kind": "source", "sources": ["manual"], "weight": 30}], threshold=30)
    lead = new_lead(owner, name="Dana", email="dana.scored@example.com")
    _pseudonymize(owner, lead["id"])
    call_api("POST", leads_path(owner.org_id, lead["id"]) + "/score", sub=owner.sub)
    assert lead_row(lead["id"])["score"] == 30


def test_a_hard_erase_of_a_survivor_forgets_its_merged_duplicates_stored_answers(owner):
    person = _person()
    survivor = new_lead(owner, name="Dana")
    duplicate = call_api(
        "POST",
        leads_path(owner.org_id),
        sub=owner.sub,
        body={"name": person["name"], "email": person["email"]},
        headers={"Idempotency-Key": "staff-duplicate"},
    ).data
    merge(owner, survivor["id"], duplicate["id"])

    assert call_api("DELETE", leads_path(owner.org_id, survivor["id"]), sub=owner.sub).status == 204

    assert tables_containing(person["name"], person["email"]) == {}


def test_a_webhook_lead_of_a_pseudonymized_person_keeps_nothing_of_what_they_sent(owner):
    person = _person()
    lead = new_lead(owner, name=person["name"], phone=person["phone"])
    _pseudonymize(owner, lead["id"])
    sent = {"wamid": f"wamid.{person['digits']}", "profileName": person["name"], "text": "hi again"}

    ingested = ingest(
        owner.org_id,
        WebhookLead(
            channel="whatsapp",
            external_ref=f"ctwa-{person['digits']}",
            via=ReturnVia.WHATSAPP,
            new=NewLead(name=person["name"], phone=person["phone"], source="whatsapp"),
            hook=None,
            attribution={"platform": "whatsapp"},
            received=sent,
        ),
    )

    assert (ingested.outcome, str(ingested.lead_id)) == (Outcome.DUPLICATE, lead["id"])
    assert tables_containing(person["name"], person["phone"]) == {}


def test_the_persons_deals_keep_their_figures_and_their_tickets_go(owner):
    person = _person()
    lead = new_lead(owner, name=person["name"], email=person["email"])
    deal = open_deal(owner, leadId=lead["id"], title=f"Annual plan for {person['name']}", valueMinor=99_000)
    ticket = open_ticket(owner, {"subject": f"{person['name']} cannot book", "leadId": lead["id"]})
    assert ticket.status == 201, ticket.body

    _pseudonymize(owner, lead["id"])

    assert tables_containing(person["name"], person["email"]) == {}
    assert (deal_row(deal["id"])["value_minor"], str(deal_row(deal["id"])["lead_id"])) == (99_000, lead["id"])
