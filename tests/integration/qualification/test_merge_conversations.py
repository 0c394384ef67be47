"""A merge with the conversations area's tables: threads move (and continue under the survivor's key when it
has none on that channel), the append-only consent ledger is copied, one bulk-email recipient row per job;
an undo puts all of it back. Pseudonymization keeps threads and the ledger without words or notes."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import insert, select

from leadcrm.conversations.tables import bulk_email_jobs, bulk_email_recipients, conversations, lead_consent_events
from leadcrm.leads import pseudonym_tokens
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.api import call_api, leads_path
from tests.support.conversations_helpers import email_lead, messages_of, thread_row, verify_sender
from tests.support.erase_helpers import tables_containing
from tests.support.factories import make_caller
from tests.support.qualification_helpers import merge, new_lead, undo


@pytest.fixture(autouse=True)
def _ses(event_bus, monkeypatch) -> None:
    verify_sender()
    monkeypatch.setenv("PSEUDONYM_KEY", "test-pseudonym-key")
    pseudonym_tokens.forget()


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _ledger(lead_id) -> list[dict]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_consent_events).where(lead_consent_events.c.lead_id == uuid.UUID(str(lead_id)))
        ).mappings()
        return [dict(r) for r in rows]


def _consent(caller, lead_id, channel: str, body: dict) -> None:
    path = leads_path(caller.org_id, lead_id) + f"/consent/{channel}"
    response = call_api("PUT", path, sub=caller.sub, body=body)
    assert response.status == 200, response.body


def _thread(caller, lead_id, text: str) -> str:
    response = email_lead(caller, lead_id, body=text, subject="Classes")
    assert response.status in (200, 201), response.body
    return response.data["conversation"]["id"] if "conversation" in response.data else response.data["id"]


def test_the_duplicates_thread_continues_under_the_survivors_key(owner):
    survivor = new_lead(owner, name="Dana Cohen", email="dana.thread@example.com")
    duplicate = new_lead(owner, name="Dana", email="dana.other@example.com")
    thread_id = _thread(owner, duplicate["id"], "Hello Dana")

    merge_id = merge(owner, survivor["id"], duplicate["id"]).data["mergeId"]

    row = thread_row(thread_id)
    assert (str(row["lead_id"]), row["contact_key"]) == (survivor["id"], f"lead:{survivor['id']}")
    assert undo(owner, merge_id).status == 200
    row = thread_row(thread_id)
    assert (str(row["lead_id"]), row["contact_key"]) == (duplicate["id"], f"lead:{duplicate['id']}")


def test_when_both_have_a_thread_on_the_channel_the_survivors_stays_current(owner):
    survivor = new_lead(owner, name="Dana Cohen", email="dana.both@example.com")
    duplicate = new_lead(owner, name="Dana", email="dana.both2@example.com")
    own = _thread(owner, survivor["id"], "Hi")
    theirs = _thread(owner, duplicate["id"], "Hello")

    merge(owner, survivor["id"], duplicate["id"])

    assert thread_row(own)["contact_key"] == f"lead:{survivor['id']}"
    assert (str(thread_row(theirs)["lead_id"]), thread_row(theirs)["contact_key"]) == (
        survivor["id"],
        f"lead:{duplicate['id']}",
    )
    with get_engine().connect() as conn:
        threads = conn.execute(
            select(conversations.c.id).where(conversations.c.lead_id == uuid.UUID(survivor["id"]))
        ).all()
    assert len(threads) == 2


def test_the_append_only_consent_ledger_is_copied_to_the_survivor_and_an_undo_restores_it(owner):
    survivor = new_lead(owner, name="Dana Cohen")
    duplicate = new_lead(owner, name="Dana")
    _consent(owner, duplicate["id"], "sms", {"status": "granted", "legalBasis": "consent", "note": "asked twice"})
    _consent(owner, duplicate["id"], "sms", {"status": "revoked"})
    originals = _ledger(duplicate["id"])

    merge_id = merge(owner, survivor["id"], duplicate["id"]).data["mergeId"]

    copied = _ledger(survivor["id"])
    assert sorted((r["channel"], r["status"], r["note"], r["occurred_at"]) for r in copied) == sorted(
        (r["channel"], r["status"], r["note"], r["occurred_at"]) for r in originals
    )
    assert undo(owner, merge_id).status == 200
    assert _ledger(survivor["id"]) == []
    assert sorted(r["id"] for r in _ledger(duplicate["id"])) == sorted(r["id"] for r in originals)


def test_pseudonymizing_keeps_threads_and_the_ledger_without_words_or_notes(owner):
    tag = uuid.uuid4().hex[:8]
    name, email_address = f"Ximena Vantablack{tag}", f"xv.{tag}@example.com"
    lead = new_lead(owner, name=name, email=email_address)
    thread_id = _thread(owner, lead["id"], f"Dear {name}, see you Monday")
    _consent(owner, lead["id"], "email", {"status": "granted", "legalBasis": "consent", "note": f"{name} agreed"})

    response = call_api("POST", leads_path(owner.org_id, lead["id"]) + "/pseudonymize", sub=owner.sub)

    assert response.status == 200, response.body
    assert tables_containing(name, email_address) == {}
    assert len(messages_of(thread_id)) == 1
    assert [(r["channel"], r["status"], r["note"]) for r in _ledger(lead["id"]) if r["channel"] == "email"][-1] == (
        "email",
        "granted",
        None,
    )


def test_a_bulk_job_both_leads_were_in_keeps_one_recipient_row(owner):
    survivor, duplicate = new_lead(owner, name="Dana Cohen"), new_lead(owner, name="Dana")
    both, only_duplicate = uuid7(), uuid7()
    with get_engine().begin() as conn:
        for job_id in (both, only_duplicate):
            conn.execute(
                insert(bulk_email_jobs).values(
                    id=job_id, organization_id=owner.org_id, subject="News", body="Hi", audience={}
                )
            )
        conn.execute(
            insert(bulk_email_recipients),
            [
                {"job_id": both, "lead_id": uuid.UUID(survivor["id"]), "organization_id": owner.org_id},
                {"job_id": both, "lead_id": uuid.UUID(duplicate["id"]), "organization_id": owner.org_id},
                {"job_id": only_duplicate, "lead_id": uuid.UUID(duplicate["id"]), "organization_id": owner.org_id},
            ],
        )

    merge_id = merge(owner, survivor["id"], duplicate["id"]).data["mergeId"]

    def jobs_of(lead_id) -> set:
        with get_engine().connect() as conn:
            return set(
                conn.execute(
                    select(bulk_email_recipients.c.job_id).where(bulk_email_recipients.c.lead_id == uuid.UUID(lead_id))
                ).scalars()
            )

    assert jobs_of(survivor["id"]) == {both, only_duplicate}
    undo(owner, merge_id)
    assert (jobs_of(survivor["id"]), jobs_of(duplicate["id"])) == ({both}, {both, only_duplicate})
