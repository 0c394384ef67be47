"""Consent per lead and channel: an append-only ledger (legal basis, source, actor) with the current state
beside it; staff grants and revocations audited; dnc revokes every channel through the same ledger."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text, update
from sqlalchemy.exc import DBAPIError

from leadcrm.conversations.tables import lead_consent_events
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.conversations_helpers import consent_ledger, consent_state, put_consent
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import activities, create_lead


@pytest.fixture
def owner(event_bus):
    return make_caller(role="owner")


def test_a_staff_revocation_is_in_the_ledger_with_its_actor_and_on_the_timeline(owner):
    lead = create_lead(owner, email="dana@example.com")
    response = put_consent(owner, lead["id"], "email", {"status": "revoked", "note": "asked on the phone"})
    assert response.status == 200, response.body
    [entry] = consent_ledger(lead["id"])
    assert (entry["channel"], entry["status"], entry["source"]) == ("email", "revoked", "staff")
    assert entry["actor_user_id"] == owner.user.id and entry["note"] == "asked on the phone"
    [audit] = activities(lead["id"], "consent_changed")
    assert audit["actor_user_id"] == owner.user.id
    assert audit["payload"] == {"channel": "email", "status": "revoked", "legalBasis": None, "source": "staff"}


def test_a_re_grant_after_a_revocation_keeps_both_in_the_ledger(owner):
    lead = create_lead(owner, email="dana@example.com")
    put_consent(owner, lead["id"], "email", {"status": "revoked"})
    response = put_consent(owner, lead["id"], "email", {"status": "granted", "legalBasis": "consent"})
    email = next(c for c in response.data["channels"] if c["channel"] == "email")
    assert email == {**email, "status": "granted", "allowed": True, "legalBasis": "consent", "source": "staff"}
    assert [(e["status"], e["legal_basis"]) for e in consent_ledger(lead["id"])] == [
        ("revoked", None),
        ("granted", "consent"),
    ]
    assert [h["status"] for h in response.data["history"]] == ["granted", "revoked"]
    assert len(activities(lead["id"], "consent_changed")) == 2


def test_a_grant_needs_its_legal_basis(owner):
    lead = create_lead(owner)
    response = put_consent(owner, lead["id"], "sms", {"status": "granted"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")
    assert consent_ledger(lead["id"]) == []


def test_an_unknown_channel_is_not_found(owner):
    lead = create_lead(owner)
    response = put_consent(owner, lead["id"], "pigeon", {"status": "revoked"})
    assert (response.status, response.error_code) == (404, "CONSENT_CHANNEL_NOT_FOUND")


def test_another_organizations_lead_is_not_found(owner):
    stranger = make_caller(role="owner")
    lead = create_lead(stranger)
    assert put_consent(owner, lead["id"], "email", {"status": "revoked"}).error_code == "LEAD_NOT_FOUND"
    assert call_api("GET", leads_path(owner.org_id, lead["id"]) + "/consent", sub=owner.sub).status == 404
    assert consent_ledger(lead["id"]) == []


def test_nothing_said_means_every_channel_is_allowed(owner):
    lead = create_lead(owner)
    view = call_api("GET", leads_path(owner.org_id, lead["id"]) + "/consent", sub=owner.sub).data
    assert [(c["channel"], c["allowed"], c["status"]) for c in view["channels"]] == [
        ("email", True, None),
        ("sms", True, None),
        ("whatsapp", True, None),
        ("call", True, None),
    ]
    assert view["history"] == []


def test_members_cannot_change_consent():
    member = make_caller(role="member")
    assert put_consent(member, uuid.uuid4(), "email", {"status": "revoked"}).status == 403


def test_dnc_revokes_every_channel_in_the_ledger_too(owner):
    lead = create_lead(owner)
    call_api("POST", leads_path(owner.org_id, lead["id"]) + "/touches", sub=owner.sub,
             body={"channel": "call", "outcome": "dnc"})  # fmt: skip
    assert consent_state(lead["id"]) == {c: "revoked" for c in ("email", "sms", "whatsapp", "call")}
    assert {(e["channel"], e["source"], e["actor_user_id"]) for e in consent_ledger(lead["id"])} == {
        (c, "call_outcome_dnc", owner.user.id) for c in ("email", "sms", "whatsapp", "call")
    }


def test_the_ledger_refuses_updates(owner):
    lead = create_lead(owner)
    put_consent(owner, lead["id"], "email", {"status": "revoked"})
    with pytest.raises(DBAPIError, match="append-only"), get_engine().begin() as conn:
        conn.execute(update(lead_consent_events).values(status="granted"))


def test_erasing_the_lead_removes_its_ledger(owner):
    lead = create_lead(owner)
    put_consent(owner, lead["id"], "email", {"status": "revoked"})
    assert call_api("DELETE", leads_path(owner.org_id, lead["id"]), sub=owner.sub).status in (200, 204)
    with get_engine().connect() as conn:
        left = conn.execute(
            text("SELECT count(*) FROM lead_consent_events WHERE lead_id = :id"), {"id": uuid.UUID(lead["id"])}
        ).scalar_one()
    assert left == 0
