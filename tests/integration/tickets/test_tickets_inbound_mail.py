"""Mail to an organization's support address, through the ingestion function as SES delivers it (raw MIME
in S3, the S3 event on the queue): it opens a ticket in that organization, a redelivery changes nothing,
and the same mail never reaches a conversation thread."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from leadcrm.platform.db.engine import get_engine
from leadcrm.tickets import staff_actions
from leadcrm.tickets.config import settings_view
from leadcrm.tickets.tables import ticket_messages, tickets
from tests.support.conversations_helpers import (
    all_messages_count,
    deliver_inbound,
    fixture_mail,
    make_inbound_bucket,
    verify_sender,
)
from tests.support.factories import make_caller
from tests.support.tickets_helpers import actor_of, in_uow, ticket_mail_rows

NO_FAILURES = {"batchItemFailures": []}
GMAIL = "gmail_reply_multipart_qp.eml"


@pytest.fixture(autouse=True)
def _aws(event_bus) -> None:
    verify_sender()
    make_inbound_bucket()


def _support_address(org_id) -> str:
    """The organization's address (its helpdesk settings are made, and committed, on first read)."""
    with get_engine().begin() as conn:
        return settings_view(conn, org_id)["support_address"]


def _tickets_of(org_id) -> list[dict]:
    with get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(select(tickets).where(tickets.c.organization_id == org_id)).mappings()]


def test_mail_to_the_support_address_opens_an_email_ticket_in_that_organization() -> None:
    owner, stranger = make_caller(role="owner"), make_caller(role="owner")
    raw = fixture_mail(GMAIL, _support_address(owner.org_id))

    assert deliver_inbound(raw) == NO_FAILURES

    (ticket,) = _tickets_of(owner.org_id)
    assert ticket["channel"] == "email"
    assert _tickets_of(stranger.org_id) == []


def test_a_redelivered_support_mail_opens_one_ticket_and_writes_no_conversation_message() -> None:
    owner = make_caller(role="owner")
    messages_before = all_messages_count()
    raw = fixture_mail(GMAIL, _support_address(owner.org_id), message_id="<support-1@example.com>")

    for _ in range(3):
        assert deliver_inbound(raw) == NO_FAILURES

    assert len(_tickets_of(owner.org_id)) == 1
    assert all_messages_count() == messages_before


def test_a_forged_support_token_opens_nothing() -> None:
    owner = make_caller(role="owner")
    with get_engine().connect() as conn:
        before = conn.execute(select(func.count()).select_from(tickets)).scalar_one()
    raw = fixture_mail(GMAIL, "support+aaaaaaaaaaaa@mail.leadcrm.local")

    assert deliver_inbound(raw) == NO_FAILURES

    with get_engine().connect() as conn:
        assert conn.execute(select(func.count()).select_from(tickets)).scalar_one() == before
    assert _tickets_of(owner.org_id) == []


def _from(raw: bytes, sender: bytes) -> bytes:
    """The fixture mail sent from `sender` (its own From header dropped)."""
    raw = raw.replace(b"\nFrom: ", b"\nX-Was-From: ", 1)
    return raw.replace(b"\nSubject: ", b"\nFrom: " + sender + b"\nSubject: ", 1)


def _messages_of(ticket_id) -> list[dict]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(ticket_messages).where(ticket_messages.c.ticket_id == ticket_id)).mappings()
        return [dict(r) for r in rows]


def test_support_mail_from_no_address_once_cleaned_opens_a_ticket_without_a_requester_address() -> None:
    """`\\x00@example.com` leaves `@example.com`, which no mail can go to: the request is kept (spec, lead intake:
    durable receipt), with no requester address, and the mails it would send are recorded as skipped."""
    owner = make_caller(role="owner")
    raw = _from(fixture_mail(GMAIL, _support_address(owner.org_id)), b"\x00@example.com")

    assert deliver_inbound(raw) == NO_FAILURES

    (ticket,) = _tickets_of(owner.org_id)
    assert (ticket["requester_type"], ticket["requester_email"]) == ("unknown", None)
    (message,) = _messages_of(ticket["id"])
    assert message["sender_email"] is None and message["body"]
    in_uow(staff_actions.assign, actor_of(owner), ticket["id"], assignee_user_id=owner.user.id, queue_id=None)
    in_uow(staff_actions.respond, actor_of(owner), ticket["id"])
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="Answered by phone")
    [mail] = ticket_mail_rows(ticket["id"])
    assert (mail["status"], mail["to_address"], mail["error"]) == ("skipped", None, "no address to write to")


def test_support_mail_from_an_address_with_a_nul_in_it_keeps_the_address_without_it() -> None:
    owner = make_caller(role="owner")
    raw = _from(fixture_mail(GMAIL, _support_address(owner.org_id)), b"Da\x00na@Example.com")

    assert deliver_inbound(raw) == NO_FAILURES

    (ticket,) = _tickets_of(owner.org_id)
    assert ticket["requester_email"] == "dana@example.com"
