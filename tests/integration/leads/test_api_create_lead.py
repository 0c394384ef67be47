"""POST /organizations/{orgId}/leads by staff: the lead, its first status event and `lead.created`."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import select

from leadcrm.leads.tables import lead_status_events, leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.tables import outbox
from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller

ADA = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+44 20 7946 0958", "note": "Wants a trial"}


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating a lead publishes `lead.created` after commit; here the bus exists."""


def _create(caller, body=ADA, **kwargs):
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body, **kwargs)


def test_staff_creating_a_lead_get_201_with_the_lead_in_a_data_envelope():
    caller = make_caller(role="coach")
    response = _create(caller)
    assert response.status == 201
    assert set(response.body) == {"data"}
    lead = response.data
    assert lead["name"] == "Ada Lovelace"
    assert lead["email"] == "ada@example.com"
    assert lead["phone"] == "+44 20 7946 0958"
    assert lead["organizationId"] == str(caller.org_id)
    assert uuid.UUID(lead["id"]).version == 7


def test_the_created_lead_is_in_camel_case_json():
    lead = _create(make_caller()).data
    for key in ("organizationId", "pipelineId", "stageId", "isTest", "statusChangedAt", "createdAt", "updatedAt"):
        assert key in lead
    assert not any("_" in key for key in lead)


def test_the_response_is_json():
    assert _create(make_caller()).headers["content-type"].startswith("application/json")


def test_a_new_lead_starts_with_status_new():
    assert _create(make_caller()).data["status"] == "new"


def test_a_new_lead_defaults_to_source_manual_and_not_a_test():
    lead = _create(make_caller()).data
    assert lead["source"] == "manual"
    assert lead["isTest"] is False


def test_is_test_and_source_are_taken_from_the_body():
    lead = _create(make_caller(), body={"name": "Ada", "isTest": True, "source": "walk_in"}).data
    assert lead["isTest"] is True
    assert lead["source"] == "walk_in"


def test_the_lead_is_stored_in_the_callers_organization():
    caller = make_caller()
    lead_id = uuid.UUID(_create(caller).data["id"])
    with get_engine().connect() as conn:
        row = conn.execute(select(leads).where(leads.c.id == lead_id)).mappings().one()
    assert row["organization_id"] == caller.org_id
    assert row["created_by_user_id"] == caller.user.id


def test_creating_a_lead_records_its_first_status_event_from_nothing_to_new_by_the_caller():
    caller = make_caller()
    lead_id = uuid.UUID(_create(caller).data["id"])
    with get_engine().connect() as conn:
        events = (
            conn.execute(select(lead_status_events).where(lead_status_events.c.lead_id == lead_id)).mappings().all()
        )
    assert len(events) == 1
    assert events[0]["from_status"] is None
    assert events[0]["to_status"] == "new"
    assert events[0]["actor_user_id"] == caller.user.id
    assert events[0]["organization_id"] == caller.org_id


def test_creating_a_lead_writes_one_lead_created_outbox_event():
    caller = make_caller()
    lead_id = _create(caller).data["id"]
    with get_engine().connect() as conn:
        rows = conn.execute(select(outbox).where(outbox.c.aggregate_id == uuid.UUID(lead_id))).mappings().all()
    assert len(rows) == 1
    assert rows[0]["type"] == "lead.created"
    assert rows[0]["organization_id"] == caller.org_id
    assert rows[0]["payload"]["leadId"] == lead_id


def test_the_lead_created_event_carries_no_personal_data():
    caller = make_caller()
    lead_id = _create(caller).data["id"]
    with get_engine().connect() as conn:
        payload = conn.execute(select(outbox.c.payload).where(outbox.c.aggregate_id == uuid.UUID(lead_id))).scalar_one()
    text = json.dumps(payload)
    for value in ADA.values():
        assert value not in text
    for key in ("name", "email", "phone", "note"):
        assert key not in payload


@pytest.mark.parametrize("role", ["coach", "admin", "owner"])
def test_coach_admin_and_owner_may_create_leads(role):
    assert _create(make_caller(role=role)).status == 201


def test_the_first_lead_of_an_organization_lands_on_the_new_stage_of_its_default_pipeline():
    caller = make_caller()
    first = _create(caller).data
    second = _create(caller, body={"name": "Grace Hopper"}).data
    assert (first["pipelineId"], first["stageId"]) == (second["pipelineId"], second["stageId"])
