"""Mail to an organization's support address, through the ingestion function as SES delivers it (raw MIME
in S3, the S3 event on the queue): it opens a ticket in that organization, a redelivery changes nothing,
and the same mail never reaches a conversation thread."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from leadcrm.platform.db.engine import get_engine
from leadcrm.tickets.config import settings_view
from leadcrm.tickets.tables import tickets
from tests.support.conversations_helpers import (
    all_messages_count,
    deliver_inbound,
    fixture_mail,
    make_inbound_bucket,
    verify_sender,
)
from tests.support.factories import make_caller

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
