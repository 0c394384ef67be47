"""Tickets and email, the pure parts (tickets.rules.mail): the support address, references, what a reply
to "is it resolved?" means, and the mails."""

from __future__ import annotations

import pytest
from email_validator import validate_email
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.tickets.rules.mail import (
    ReplyMeaning,
    compose_confirmation,
    compose_survey,
    message_id_key,
    new_support_token,
    parse_support_address,
    reopen_reason,
    reply_meaning,
    requester_address,
    subject_reference,
    support_address,
)

DOMAIN = "mail.example.com"


def test_a_support_address_reads_back_to_its_token():
    token = new_support_token()
    assert parse_support_address(support_address(token, DOMAIN), DOMAIN) == token


def test_a_support_address_is_found_behind_a_display_name_and_in_any_case():
    token = new_support_token()
    assert parse_support_address(f"Studio Help <SUPPORT+{token.upper()}@Mail.Example.com>", DOMAIN) == token


@pytest.mark.parametrize(
    "address",
    [
        "reply+abc@mail.example.com",  # another kind of address (a conversation's)
        "support@mail.example.com",  # no token
        "support+short@mail.example.com",  # not a token
        "support+abcdefghijkl@elsewhere.com",  # another domain
        "not an address",
    ],
)
def test_other_addresses_are_not_support_addresses(address):
    assert parse_support_address(address, DOMAIN) is None


def test_tokens_are_random():
    assert len({new_support_token() for _ in range(50)}) == 50


def test_the_ticket_number_is_read_from_the_subject():
    assert subject_reference("Re: [#1042] Resolved: cannot log in") == 1042
    assert subject_reference("Re: cannot log in") is None


def test_the_ses_message_id_is_the_part_before_the_at_sign():
    assert message_id_key("<0102018c-abc-000000@eu-west-1.amazonses.com>") == "0102018c-abc-000000"
    assert message_id_key(None) is None


@pytest.mark.parametrize(
    "reply",
    ["Yes, thank you!", "Fixed, thanks", "It works now", "yes", "Confirmed.", "All good, no problem at all"],
)
def test_a_reply_that_says_it_is_solved_confirms(reply):
    assert reply_meaning(reply) is ReplyMeaning.CONFIRMED


@pytest.mark.parametrize(
    "reply",
    [
        "No, it still crashes",
        "Thanks, but it is not fixed",
        "It doesn't work",
        "Same problem again this morning",
        "Can you call me?",  # unclear: a person reads it
        "",
    ],
)
def test_a_reply_that_says_it_persists_or_is_unclear_reopens(reply):
    assert reply_meaning(reply) is ReplyMeaning.PERSISTS


def test_quoted_history_does_not_count():
    reply = "Still broken.\n\nOn Mon, 2 Mar 2026, Studio wrote:\n> reply yes if it works, thanks"
    assert reply_meaning(reply) is ReplyMeaning.PERSISTS
    assert reply_meaning("Works!\n> Is it still broken?") is ReplyMeaning.CONFIRMED


def test_the_reopen_reason_is_the_replys_own_words():
    assert reopen_reason("It still  crashes\n> quoted") == "It still crashes"
    assert len(reopen_reason("x" * 2000)) == 500


def test_the_confirmation_names_the_ticket_the_fix_and_the_auto_close_window():
    mail = compose_confirmation(7, "Cannot log in", "We reset your password.", "Studio", 72)
    assert mail.subject == "[#7] Resolved: Cannot log in"
    assert "We reset your password." in mail.text and "3 days" in mail.text


def test_the_survey_carries_its_link():
    mail = compose_survey(7, "Cannot log in", "Studio", "https://x/public/ticket-surveys/tok")
    assert mail.subject == "[#7] How did we do?" and "https://x/public/ticket-surveys/tok" in mail.text


@pytest.mark.parametrize(
    ("sender", "address"),
    [
        ("Dana@Example.com", "dana@example.com"),
        ("da\x00na@example.com", "dana@example.com"),  # the NUL carried nothing: the address is kept
        (" dana@example.com\r\n", "dana@example.com"),
        ("\x00@example.com", None),  # "@example.com" is left: no address
        ("dana@", None),
        ("@", None),
        ("", None),
        (None, None),
    ],
)
def test_a_requester_address_is_the_senders_cleaned_or_none(sender, address):
    assert requester_address(sender) == address


@settings(max_examples=200)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40).map(lambda local: f"{local}@example.com"))
def test_a_requester_address_is_always_an_address_without_control_characters(sender):
    address = requester_address(sender)
    if address is not None:
        assert address.isprintable() and not any(ch.isspace() for ch in address)
        validate_email(address, check_deliverability=False)
