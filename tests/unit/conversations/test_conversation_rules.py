"""Pure conversation rules: signed reply addresses and unsubscribe tokens, subjects, the member gate,
the inbox cursor."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from leadcrm.conversations.rules.messages import (
    KeysetCursor,
    decode_keyset_cursor,
    default_subject,
    language_of,
    member_email_opted_out,
    plan_subject,
    reply_subject,
)
from leadcrm.conversations.rules.reply_addresses import (
    AddressKind,
    AddressTarget,
    parse_reply_address,
    parse_unsubscribe_token,
    reply_address,
    unsubscribe_token,
)
from leadcrm.platform.errors import BadRequest

KEY = b"test-key"
OTHER_KEY = b"another-key"
DOMAIN = "mail.example.com"
THREAD = AddressTarget(AddressKind.CONVERSATION, uuid.UUID("0190f0a8-1111-7222-8333-944455556666"))
LEAD = AddressTarget(AddressKind.LEAD, uuid.UUID("0190f0a8-aaaa-7bbb-8ccc-ddddeeeeffff"))


@pytest.mark.parametrize("target", [THREAD, LEAD])
def test_a_signed_reply_address_resolves_to_its_target(target):
    assert parse_reply_address(reply_address(KEY, target, DOMAIN), [KEY], DOMAIN) == target


def test_a_thread_address_is_contact_plus_the_conversation_id_and_a_signature():
    address = reply_address(KEY, THREAD, DOMAIN)
    local, _, domain = address.partition("@")
    assert domain == DOMAIN
    assert local.startswith(f"contact+{THREAD.id.hex}.")


def test_a_bulk_address_is_keyed_by_the_lead_with_the_ol_prefix():
    assert reply_address(KEY, LEAD, DOMAIN).startswith(f"contact+ol-{LEAD.id.hex}.")


def test_the_longest_reply_address_local_part_fits_rfc_5321():
    assert len(reply_address(KEY, LEAD, DOMAIN).partition("@")[0]) <= 64


def test_an_address_is_resolved_whatever_case_the_mail_system_gave_it():
    assert parse_reply_address(reply_address(KEY, THREAD, DOMAIN).upper(), [KEY], DOMAIN) == THREAD


def test_a_forged_signature_resolves_to_nothing():
    address = reply_address(KEY, THREAD, DOMAIN)
    tampered = address[: address.index("@") - 1] + ("a" if address[address.index("@") - 1] != "a" else "b")
    assert parse_reply_address(tampered + "@" + DOMAIN, [KEY], DOMAIN) is None


def test_a_signature_made_with_another_key_resolves_to_nothing():
    assert parse_reply_address(reply_address(OTHER_KEY, THREAD, DOMAIN), [KEY], DOMAIN) is None


def test_a_signature_for_one_thread_does_not_open_another():
    other = AddressTarget(AddressKind.CONVERSATION, uuid.uuid4())
    signature = reply_address(KEY, THREAD, DOMAIN).partition("@")[0].rpartition(".")[2]
    assert parse_reply_address(f"contact+{other.id.hex}.{signature}@{DOMAIN}", [KEY], DOMAIN) is None


def test_a_thread_signature_does_not_pass_for_a_lead_with_the_same_id():
    signature = reply_address(KEY, THREAD, DOMAIN).partition("@")[0].rpartition(".")[2]
    assert parse_reply_address(f"contact+ol-{THREAD.id.hex}.{signature}@{DOMAIN}", [KEY], DOMAIN) is None


def test_an_address_on_another_domain_resolves_to_nothing():
    address = reply_address(KEY, THREAD, "evil.example.com")
    assert parse_reply_address(address, [KEY], DOMAIN) is None


@pytest.mark.parametrize(
    "address",
    ["", "contact@mail.example.com", "contact+@mail.example.com", "contact+nothex.aaaaaaaaaaaaaaaa@mail.example.com",
     "support@mail.example.com", "not an address"],
)  # fmt: skip
def test_malformed_addresses_resolve_to_nothing(address):
    assert parse_reply_address(address, [KEY], DOMAIN) is None


def test_a_previous_key_still_verifies_during_a_rotation():
    old_address = reply_address(OTHER_KEY, THREAD, DOMAIN)
    assert parse_reply_address(old_address, [KEY, OTHER_KEY], DOMAIN) == THREAD


def test_an_unsubscribe_token_names_its_lead_and_cannot_be_forged():
    token = unsubscribe_token(KEY, LEAD.id)
    assert parse_unsubscribe_token(token, [KEY]) == LEAD.id
    assert parse_unsubscribe_token(token, [OTHER_KEY]) is None
    assert parse_unsubscribe_token(f"{uuid.uuid4().hex}.{token.partition('.')[2]}", [KEY]) is None
    assert parse_unsubscribe_token("garbage", [KEY]) is None


def test_an_unsubscribe_token_is_not_a_reply_signature():
    reply_signature = reply_address(KEY, LEAD, DOMAIN).partition("@")[0].rpartition(".")[2]
    assert parse_unsubscribe_token(f"{LEAD.id.hex}.{reply_signature}", [KEY]) is None


# -- subjects ------------------------------------------------------------------------------------------


def test_the_first_message_stores_its_subject():
    plan = plan_subject(None, "Trial class", "Studio", "en")
    assert (plan.subject, plan.store) == ("Trial class", "Trial class")


def test_later_messages_reuse_the_stored_subject_with_re_whatever_they_ask():
    plan = plan_subject("Trial class", "Something else", "Studio", "en")
    assert (plan.subject, plan.store) == ("Re: Trial class", None)


def test_re_is_never_doubled():
    assert reply_subject("Re: Trial class") == "Re: Trial class"
    assert reply_subject("RE: Trial class") == "RE: Trial class"


@pytest.mark.parametrize(
    ("locales", "expected"),
    [(("en",), "A message from Studio"), (("he",), "הודעה מאת Studio"), (("he-IL",), "הודעה מאת Studio"),
     ((None, "he"), "הודעה מאת Studio"), (("fr",), "A message from Studio"), ((None, None), "A message from Studio")],
)  # fmt: skip
def test_a_blank_subject_falls_back_to_a_default_in_the_contacts_language(locales, expected):
    assert plan_subject(None, "   ", "Studio", *locales).subject == expected
    assert default_subject("Studio", *locales) == expected


def test_the_contacts_locale_wins_over_the_organizations():
    assert language_of("en-US", "he") == "en"
    assert language_of("de", "he") == "he"


# -- the member gate -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefs", "opted_out"),
    [(None, False), ({}, False), ({"newMessage": {}}, False), ({"newMessage": {"email": True}}, False),
     ({"newMessage": {"email": None}}, False), ({"newMessage": {"email": "false"}}, False),
     ({"newMessage": "off"}, False), ({"other": {"email": False}}, False), ([], False),
     ({"newMessage": {"email": False}}, True)],
)  # fmt: skip
def test_only_an_explicit_email_false_opts_a_member_out(prefs, opted_out):
    assert member_email_opted_out(prefs) is opted_out


# -- the inbox cursor ----------------------------------------------------------------------------------


def test_a_cursor_round_trips():
    cursor = KeysetCursor(at=datetime(2026, 11, 29, 10, 0, 0, 123456, tzinfo=UTC), id=uuid.uuid4())
    assert decode_keyset_cursor(cursor.encode()) == cursor


@pytest.mark.parametrize("cursor", ["", "x", "!!!!", "A" * 65, "AAAA"])
def test_a_cursor_the_api_did_not_issue_is_a_400(cursor):
    with pytest.raises(BadRequest) as raised:
        decode_keyset_cursor(cursor)
    assert raised.value.code == "INVALID_CURSOR"
