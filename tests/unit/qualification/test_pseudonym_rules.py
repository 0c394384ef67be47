"""Pseudonym tokens (leads.rules.pseudonyms): keyed per organization, of the canonical email and phone."""

from __future__ import annotations

import uuid

from leadcrm.leads.rules.pseudonyms import organization_key, token, tokens_for

KEY = b"master"
ORG = uuid.UUID("01900000-0000-7000-8000-000000000001")


def test_the_same_person_written_differently_gets_the_same_tokens():
    a = tokens_for(KEY, ORG, "Dana@Example.com ", "050-123-4567", region="IL")
    b = tokens_for(KEY, ORG, "dana@example.com", "+972 50 123 4567", region=None)
    assert a == b
    assert a.email is not None and a.phone is not None


def test_tokens_differ_between_organizations_and_keys():
    base = tokens_for(KEY, ORG, "dana@example.com", None, region=None)
    assert tokens_for(KEY, uuid.uuid4(), "dana@example.com", None, region=None).email != base.email
    assert tokens_for(b"other", ORG, "dana@example.com", None, region=None).email != base.email


def test_a_token_is_not_the_value_or_its_plain_hash():
    import hashlib

    value = "dana@example.com"
    produced = tokens_for(KEY, ORG, value, None, region=None).email
    assert value not in produced
    assert produced != hashlib.sha256(value.encode()).hexdigest()


def test_an_email_and_a_phone_never_share_a_token():
    key = organization_key(KEY, ORG)
    assert token(key, "email", "+972501234567") != token(key, "phone", "+972501234567")


def test_missing_or_unusable_values_have_no_token():
    tokens = tokens_for(KEY, ORG, "  ", "abc", region="IL")
    assert (tokens.email, tokens.phone, tokens.any) == (None, None, False)
