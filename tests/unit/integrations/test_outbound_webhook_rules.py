"""Outbound webhooks' pure rules: the Standard Webhooks signature, which addresses are public, backoff, and
what a bus event becomes."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leadcrm.integrations.rules.addresses import (
    ADDRESS_NOT_PUBLIC,
    URL_INVALID,
    URL_NOT_HTTPS,
    Refused,
    check_addresses,
    parse_allow_list,
    parse_url,
)
from leadcrm.integrations.rules.backoff import BASE, CAP, GIVE_UP_AFTER, next_attempt_at, retry_delay
from leadcrm.integrations.rules.events import EVENT_TYPES, webhook_data, webhook_types
from leadcrm.integrations.rules.signing import new_secret, signature, signed_headers, verify

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


def test_the_signature_is_base64_hmac_sha256_of_id_timestamp_and_body_with_the_secrets_bytes():
    expected = base64.b64encode(hmac.new(b"k" * 32, b"msg_1.1700000000.{}", hashlib.sha256).digest()).decode()
    assert signature(SECRET, "msg_1", 1700000000, "{}") == f"v1,{expected}"


def test_signed_headers_verify_and_a_changed_body_does_not():
    headers = signed_headers(SECRET, "d1", 1700000000, '{"a":1}')
    assert verify(SECRET, headers, '{"a":1}')
    assert not verify(SECRET, headers, '{"a":2}')
    assert not verify(new_secret(), headers, '{"a":1}')


@pytest.mark.parametrize(
    "address",
    ["10.1.2.3", "172.16.0.1", "192.168.1.1", "127.0.0.1", "169.254.169.254", "100.64.0.1", "224.0.0.1",
     "0.0.0.0", "::1", "fe80::1", "fd12::1", "::ffff:10.0.0.1", "240.0.0.1"],
)  # fmt: skip
def test_a_non_public_address_is_refused(address):
    with pytest.raises(Refused) as refused:
        check_addresses(parse_url("https://hooks.example.com/x"), [address], ())
    assert refused.value.code == ADDRESS_NOT_PUBLIC


def test_one_private_answer_among_public_ones_is_refused():
    with pytest.raises(Refused):
        check_addresses(parse_url("https://hooks.example.com/x"), ["93.184.216.34", "10.0.0.1"], ())


def test_a_public_address_over_https_is_accepted():
    assert [str(a) for a in check_addresses(parse_url("https://h.example.com"), ["93.184.216.34"], ())] == [
        "93.184.216.34"
    ]


def test_the_allow_list_lets_loopback_through_and_plain_http_only_for_it():
    allow = parse_allow_list("127.0.0.1, not-an-address")
    assert check_addresses(parse_url("http://127.0.0.1:9/h"), ["127.0.0.1"], allow)
    with pytest.raises(Refused) as refused:
        check_addresses(parse_url("http://h.example.com/h"), ["93.184.216.34"], allow)
    assert refused.value.code == URL_NOT_HTTPS


@pytest.mark.parametrize(
    ("url", "code"),
    [("ftp://h.example.com", URL_NOT_HTTPS), ("https://", URL_NOT_HTTPS), ("https://u:p@h.example.com", URL_INVALID),
     ("https://h.example.com:99999/", URL_INVALID), ("https://h.example.com/a b", URL_INVALID)],
)  # fmt: skip
def test_a_url_that_is_not_an_https_url_is_refused(url, code):
    with pytest.raises(Refused) as refused:
        parse_url(url)
    assert refused.value.code == code


@given(st.integers(min_value=1, max_value=30), st.floats(0, 1), st.floats(0, 1))
def test_each_retry_waits_at_least_as_long_as_the_one_before(attempt, jitter_a, jitter_b):
    capped = retry_delay(attempt + 1, 1) >= CAP  # past the cap the jitter alone decides
    assert capped or retry_delay(attempt + 1, jitter_b) >= retry_delay(attempt, jitter_a)


def test_the_first_retry_waits_between_half_and_all_of_the_base_delay():
    assert BASE / 2 <= retry_delay(1) <= BASE


def test_retries_stop_once_a_day_has_passed_since_the_first_attempt():
    first = datetime(2026, 12, 1, tzinfo=UTC)
    assert next_attempt_at(first, first + timedelta(hours=20), 10, jitter=0) is not None
    assert next_attempt_at(first, first + GIVE_UP_AFTER - timedelta(minutes=1), 12, jitter=1) is None


def test_a_status_change_to_converted_is_also_a_lead_converted():
    assert webhook_types("lead.status_changed", {"toStatus": "converted"}) == ["lead.status_changed", "lead.converted"]
    assert webhook_types("lead.status_changed", {"toStatus": "lost"}) == ["lead.status_changed"]
    assert webhook_types("lead.enriched", {}) == []


def test_a_delivery_carries_only_its_types_fields_never_free_text():
    event = {"aggregateId": "L1", "payload": {"leadId": "L1", "source": "form", "note": "call after 5", "name": "X"}}
    data = webhook_data("lead.created", event)
    assert data["leadId"] == "L1" and data["source"] == "form"
    assert "note" not in data and "name" not in data
    assert set(EVENT_TYPES) >= {"lead.created", "lead.status_changed", "lead.converted", "deal.stage_changed"}
