"""Text is made storable at one place: PostgreSQL holds no U+0000 in text and no \\u0000 in jsonb, so every NUL
is stripped from the parameters of every statement (leadcrm.platform.db.storable) before the server sees them,
whatever the column: a Meta lead whose answer holds a NUL is taken in, not parked in the DLQ, and so is
support mail from `\\x00@example.com` with NULs in its headers and body."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Text, bindparam, cast, select, text
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.tickets.config import settings_view
from tests.support.capture_helpers import lead_rows, receipts_of
from tests.support.conversations_helpers import deliver_inbound, fixture_mail, make_inbound_bucket, verify_sender
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    attributions_of,
    connect_page,
    deliver_leadgen,
    fresh_id,
    graph_lead,
    graph_stand_in,
    leadgen_message,
)

NO_FAILURES = {"batchItemFailures": []}


@pytest.fixture(autouse=True)
def _aws(event_bus, ingestion_queue):
    verify_sender()
    make_inbound_bucket()


def _round_trip(statement, parameters=None):
    with UnitOfWork() as uow:
        return uow.connection.execute(statement, parameters or {}).scalar_one()


def test_a_nul_in_a_text_parameter_is_stripped():
    assert _round_trip(text("SELECT CAST(:v AS text)"), {"v": "a\x00b"}) == "ab"


def test_a_nul_in_a_jsonb_value_or_key_is_stripped():
    value = {"an\x00swer": ["ye\x00s", {"deep": "\x00"}]}
    assert _round_trip(select(cast(bindparam("v", value, type_=JSONB), JSONB))) == {"answer": ["yes", {"deep": ""}]}


def test_a_nul_escape_in_json_text_cast_to_jsonb_is_stripped_but_an_escaped_backslash_is_kept():
    document = '{"a": "x\\u0000y", "b": "\\\\u0000", "c": "\\\\\\u0000"}'
    parsed = _round_trip(select(cast(bindparam("v", document, type_=Text), JSONB)))
    assert parsed == {"a": "xy", "b": "\\u0000", "c": "\\"}


def test_a_nul_in_a_recordset_row_is_stripped():
    rows = recordset("rows", "rows", [{"name": "Ad\x00a"}], {"name": Text})
    assert _round_trip(select(rows.c.name)) == "Ada"


def test_a_meta_lead_whose_answer_holds_a_nul_is_taken_in(monkeypatch):
    owner = make_caller(role="owner")
    page_id, leadgen_id = fresh_id(), fresh_id()
    connect_page(owner, page_id)
    with graph_stand_in(monkeypatch) as graph:
        graph.register(
            graph_lead(leadgen_id, full_name="Ada\x00 Lovelace", extra={"go\x00al": "Run a 10k\x00"})
        )
        assert deliver_leadgen(leadgen_message(page_id, leadgen_id)) == NO_FAILURES

    (lead,) = lead_rows(owner.org_id)
    assert lead["name"] == "Ada Lovelace"
    assert "\x00" not in (lead["note"] or "")
    (receipt,) = receipts_of(owner.org_id)
    assert "\x00" not in str(receipt)
    assert attributions_of(owner.org_id)


def test_support_mail_from_a_nul_address_with_nuls_in_headers_and_body_is_handled():
    owner = make_caller(role="owner")
    with UnitOfWork() as uow:
        support = settings_view(uow.connection, owner.org_id)["support_address"]
        uow.commit()
    raw = fixture_mail("apple_mail_reply_plain.eml", support, message_id=f"<{uuid.uuid4().hex}\x00@example.com>")
    raw = raw.replace(b"\nFrom: ", b"\nX-Was-From: ", 1)
    raw = raw.replace(b"\nSubject: ", b"\nFrom: \x00@example.com\nSubject: \x00", 1)
    raw += b"\r\nA line with a \x00 in it.\r\n"

    assert deliver_inbound(raw) == NO_FAILURES

    with UnitOfWork() as uow:
        rows = uow.connection.execute(
            text("SELECT subject FROM tickets WHERE organization_id = :o"), {"o": owner.org_id}
        ).all()
    assert [r.subject for r in rows] == ["Re: Trial class this week"]
