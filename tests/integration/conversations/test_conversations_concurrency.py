"""Races: find-or-create of a thread and recordInbound are idempotent under concurrency (INSERT … ON
CONFLICT in PostgreSQL, not a read-then-write), each call on its own connection, released together."""

from __future__ import annotations

import uuid

import pytest

from leadcrm.conversations.inbound_email import record_inbound
from leadcrm.conversations.rules.inbound_email import parse_inbound
from leadcrm.conversations.rules.messages import Channel
from leadcrm.conversations.threads import find_or_create_thread
from leadcrm.platform.db.uow import UnitOfWork
from tests.support.concurrency import run_together
from tests.support.conversations_helpers import fixture_mail, messages_of, outbox_of, thread_row, threads_of_org
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead

CALLS = 12


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Units of work publish after commit; the bus exists."""


def test_simultaneous_find_or_create_make_one_thread(private_engine):
    owner = make_caller(role="owner")
    lead_id = uuid.UUID(create_lead(owner, email="dana@example.com")["id"])

    def open_thread():
        with UnitOfWork(private_engine) as uow:
            row, created = find_or_create_thread(uow.connection, owner.org_id, Channel.EMAIL, lead_id=lead_id)
            uow.commit()
        return row["id"], created

    results, errors = run_together([open_thread] * CALLS)
    assert errors == [None] * CALLS
    assert len({thread_id for thread_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert len(threads_of_org(owner.org_id)) == 1


def test_the_same_message_delivered_at_once_is_recorded_once(private_engine):
    owner = make_caller(role="owner")
    lead_id = uuid.UUID(create_lead(owner, email="dana@example.com")["id"])
    with UnitOfWork(private_engine) as uow:
        thread, _ = find_or_create_thread(uow.connection, owner.org_id, Channel.EMAIL, lead_id=lead_id)
        uow.commit()
    email = parse_inbound(fixture_mail("apple_mail_reply_plain.eml", "contact+x.y@mail.leadcrm.local"))

    def record():
        with UnitOfWork(private_engine) as uow:
            outcome = record_inbound(uow, thread, email, email.message_id or "")
            uow.commit()
        return outcome.outcome

    results, errors = run_together([record] * CALLS)
    assert errors == [None] * CALLS
    assert sorted(results) == sorted(["recorded"] + ["duplicate"] * (CALLS - 1))
    assert len(messages_of(thread["id"])) == 1
    assert thread_row(thread["id"])["unread_count"] == 1
    assert len(outbox_of(thread["id"], "conversation.inbound_received")) == 1
