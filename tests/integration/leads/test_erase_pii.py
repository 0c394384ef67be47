"""After an erase no PII of the lead remains anywhere: every text and JSON column of every table is searched
for the lead's unique name, email and phone (information_schema-driven, so later tables are searched too),
the outbox keeps ids only, and the log lines of the erase name no one."""

from __future__ import annotations

import logging
import uuid

import pytest

from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import capture
from tests.support.erase_helpers import foreign_keys_to_leads, make_task, outbox_rows, tables_containing
from tests.support.factories import make_caller


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _person() -> dict[str, str]:
    tag = uuid.uuid4().hex[:10]
    digits = str(uuid.uuid4().int)[:7]
    return {
        "name": f"Zephyrine Quillfeather{tag}",
        "email": f"zq.{tag}@example.com",
        "phone": f"+1 555 {digits}",
        "digits": f"1555{digits}",
    }


def _lead_with_history(owner, person) -> str:
    """A lead that went through the paths that copy a person's details: public capture (receipt, capture
    key), a correction (timeline), a move to lost, a staff create of the same person that reopens it
    (another receipt and a stored Idempotency-Key answer), and a task whose title names the person."""
    received = capture(
        owner.org_id,
        {"name": person["name"], "email": person["email"], "phone": person["phone"]},
        headers={"Idempotency-Key": f"capture-{person['digits']}"},
    )
    assert received.status == 201
    listed = call_api("GET", leads_path(owner.org_id), sub=owner.sub, query={"search": person["email"]})
    (lead,) = listed.data
    lead_id = lead["id"]
    corrected = call_api(
        "PATCH", leads_path(owner.org_id, lead_id), sub=owner.sub, body={"note": f"Prefers {person['email']}"}
    )
    assert corrected.status == 200, corrected.body
    lost = call_api(
        "PATCH", leads_path(owner.org_id, lead_id), sub=owner.sub, body={"status": "lost", "lostReason": "price"}
    )
    assert lost.status == 200, lost.body
    again = call_api(
        "POST",
        leads_path(owner.org_id),
        sub=owner.sub,
        body={"name": person["name"], "email": person["email"], "phone": person["phone"]},
        headers={"Idempotency-Key": f"staff-{person['digits']}"},
    )
    assert again.status in (200, 201), again.body
    assert again.data["id"] == lead_id
    make_task(owner.org_id, lead_id=lead_id, task_type="general", title=f"Send {person['name']} the price list")
    return lead_id


def test_before_the_erase_the_scan_finds_the_person(owner):
    """The scan itself works: it finds the details where they are kept."""
    person = _person()
    _lead_with_history(owner, person)
    found = tables_containing(person["name"], person["email"], person["digits"])
    assert "leads.name" in found[person["name"]]
    assert "tasks.title" in found[person["name"]]
    assert "idempotency_keys.response_body" in found[person["email"]]
    assert "leads.phone_digits" in found[person["digits"]]


def test_no_table_keeps_the_erased_persons_details(owner):
    person = _person()
    lead_id = _lead_with_history(owner, person)
    response = call_api("DELETE", leads_path(owner.org_id, lead_id), sub=owner.sub)
    assert response.status == 204, response.body
    assert tables_containing(person["name"], person["email"], person["phone"], person["digits"]) == {}


def test_the_public_capture_key_of_the_person_is_forgotten(owner):
    """A capture key's answer is the same for everyone; its request fingerprint is what leads back."""
    person = _person()
    lead_id = _lead_with_history(owner, person)
    call_api("DELETE", leads_path(owner.org_id, lead_id), sub=owner.sub)
    replay = capture(
        owner.org_id,
        {"name": person["name"], "email": person["email"], "phone": person["phone"]},
        headers={"Idempotency-Key": f"capture-{person['digits']}"},
    )
    assert replay.status == 201
    listed = call_api("GET", leads_path(owner.org_id), sub=owner.sub, query={"search": person["email"]})
    assert len(listed.data) == 1  # the key no longer pins the erased answer: the visitor's retry is a new lead


def test_the_outbox_of_an_erased_lead_carries_ids_only(owner):
    person = _person()
    lead_id = _lead_with_history(owner, person)
    call_api("DELETE", leads_path(owner.org_id, lead_id), sub=owner.sub)
    events = [
        row
        for event_type in ("lead.created", "lead.status_changed", "lead.returned", "lead.erased")
        for row in outbox_rows(lead_id, event_type)
    ]
    assert {row["type"] for row in events} >= {"lead.created", "lead.status_changed", "lead.erased"}
    payloads = " ".join(str(row["payload"]) for row in events).lower()
    for detail in (person["name"], person["email"], person["phone"], person["digits"]):
        assert detail.lower() not in payloads


def test_the_erase_logs_ids_only(owner, caplog):
    person = _person()
    lead_id = _lead_with_history(owner, person)
    with caplog.at_level(logging.DEBUG):
        call_api("DELETE", leads_path(owner.org_id, lead_id), sub=owner.sub)
        call_api("POST", f"{leads_path(owner.org_id)}/bulk-erase", sub=owner.sub, body={"leadIds": [lead_id]})
    logged = " ".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records).lower()
    assert lead_id in logged
    for detail in (person["name"], person["email"], person["digits"]):
        assert detail.lower() not in logged


def test_every_other_foreign_key_to_leads_cascades_or_lets_go():
    """Only tasks.linked_lead_id holds on to a lead (NO ACTION, on purpose: the erase deletes those tasks
    first). A new table that references leads any other way must be handled by the erase."""
    rules = foreign_keys_to_leads()
    holding = {column for column, rule in rules.items() if rule not in ("CASCADE", "SET NULL")}
    assert holding == {"tasks.linked_lead_id"}
