"""Idempotency-Key on staff creates: a replay answers the first answer; another body with the key is a 422."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select

from leadcrm.leads.tables import leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.tables import outbox
from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller, make_membership

ADA = {"name": "Ada Lovelace", "email": "ada@example.com"}


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating a lead publishes `lead.created`; the bus exists."""


def _create(caller, body=ADA, key: str | None = None, org_id=None):
    headers = {"idempotency-key": key} if key is not None else None
    return call_api("POST", leads_path(org_id or caller.org_id), sub=caller.sub, body=body, headers=headers)


def _lead_count(org_id) -> int:
    with get_engine().connect() as conn:
        query = select(func.count()).select_from(leads).where(leads.c.organization_id == org_id)
        return conn.execute(query).scalar_one()


def test_the_same_key_and_body_replays_the_first_lead():
    caller = make_caller()
    key = str(uuid.uuid4())
    first = _create(caller, key=key)
    again = _create(caller, key=key)
    assert first.status == again.status == 201
    assert again.data["id"] == first.data["id"]
    assert again.body == first.body


def test_a_replay_creates_no_second_lead():
    caller = make_caller()
    key = str(uuid.uuid4())
    _create(caller, key=key)
    _create(caller, key=key)
    assert _lead_count(caller.org_id) == 1


def test_a_replay_writes_no_second_event():
    caller = make_caller()
    key = str(uuid.uuid4())
    _create(caller, key=key)
    _create(caller, key=key)
    with get_engine().connect() as conn:
        events = conn.execute(
            select(func.count()).select_from(outbox).where(outbox.c.organization_id == caller.org_id)
        ).scalar_one()
    assert events == 1


def test_a_replay_is_marked_with_the_idempotent_replayed_header():
    caller = make_caller()
    key = str(uuid.uuid4())
    first = _create(caller, key=key)
    again = _create(caller, key=key)
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"


def test_the_same_key_with_a_different_body_is_a_422_idempotency_key_reused():
    caller = make_caller()
    key = str(uuid.uuid4())
    _create(caller, key=key)
    response = _create(caller, body={"name": "Grace Hopper"}, key=key)
    assert (response.status, response.error_code) == (422, "IDEMPOTENCY_KEY_REUSED")
    assert _lead_count(caller.org_id) == 1


def test_the_same_key_in_another_organization_is_independent():
    caller = make_caller(role="owner")
    other = make_caller(role="owner")
    key = str(uuid.uuid4())
    first = _create(caller, key=key)
    elsewhere = _create(other, key=key)
    assert elsewhere.status == 201
    assert "idempotent-replayed" not in elsewhere.headers
    assert elsewhere.data["id"] != first.data["id"]
    assert elsewhere.data["organizationId"] == str(other.org_id)


def test_the_same_key_used_by_one_user_in_two_organizations_creates_in_each():
    caller = make_caller(role="owner")
    second_org = make_caller(role="owner").organization
    make_membership(second_org, caller.user, role="coach")
    key = str(uuid.uuid4())
    assert _create(caller, key=key).status == 201
    assert _create(caller, key=key, org_id=second_org.id).status == 201
    assert _lead_count(caller.org_id) == _lead_count(second_org.id) == 1


def test_without_a_key_the_same_body_is_a_new_request_and_dedup_answers_it():
    caller = make_caller()
    assert _create(caller).status == 201
    assert _create(caller).status == 409  # same email: DUPLICATE_LEAD, not a replay
    assert _lead_count(caller.org_id) == 1


def test_without_a_key_the_same_name_only_body_creates_two_leads():
    caller = make_caller()
    _create(caller, body={"name": "Ada"})
    _create(caller, body={"name": "Ada"})
    assert _lead_count(caller.org_id) == 2


def test_a_refused_request_does_not_burn_the_key():
    caller = make_caller()
    key = str(uuid.uuid4())
    refused = _create(caller, body={"name": "Ada", "unknownField": 1}, key=key)
    assert refused.status == 400
    assert _create(caller, key=key).status == 201
