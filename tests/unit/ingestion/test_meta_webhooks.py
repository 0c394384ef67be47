"""leadcrm.ingestion.rules.webhooks: the X-Hub-Signature-256 check and the subscription handshake."""

from __future__ import annotations

import hashlib
import hmac

from leadcrm.ingestion.rules.webhooks import handshake_challenge, signature_for, signature_is_valid

SECRET = "app-secret-123"
BODY = b'{"object":"page","entry":[{"id":"1","changes":[{"field":"leadgen","value":{"leadgen_id":"42"}}]}]}'


def _meta_signature(secret: str, body: bytes) -> str:
    """Computed independently of the product code, as Meta documents it."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_the_signature_meta_would_send_is_accepted():
    assert signature_is_valid(SECRET, BODY, _meta_signature(SECRET, BODY))


def test_signature_for_matches_metas_documented_algorithm():
    assert signature_for(SECRET, BODY) == _meta_signature(SECRET, BODY)


def test_a_tampered_body_is_rejected():
    assert not signature_is_valid(SECRET, BODY + b" ", _meta_signature(SECRET, BODY))


def test_a_signature_made_with_another_secret_is_rejected():
    assert not signature_is_valid(SECRET, BODY, _meta_signature("someone-else", BODY))


def test_a_missing_signature_header_is_rejected():
    assert not signature_is_valid(SECRET, BODY, None)
    assert not signature_is_valid(SECRET, BODY, "")


def test_a_header_without_the_sha256_prefix_is_rejected():
    bare_digest = _meta_signature(SECRET, BODY).removeprefix("sha256=")
    assert not signature_is_valid(SECRET, BODY, bare_digest)


def test_a_sha1_style_header_is_rejected():
    assert not signature_is_valid(SECRET, BODY, "sha1=" + hashlib.sha1(BODY).hexdigest())


def test_an_empty_configured_secret_rejects_everything_even_a_matching_signature():
    assert not signature_is_valid("", BODY, _meta_signature("", BODY))


def test_the_handshake_echoes_the_challenge_for_subscribe_with_the_right_token():
    params = {"hub.mode": "subscribe", "hub.verify_token": "tok", "hub.challenge": "1158201444"}
    assert handshake_challenge(params, "tok") == "1158201444"


def test_the_handshake_refuses_a_wrong_token():
    params = {"hub.mode": "subscribe", "hub.verify_token": "nope", "hub.challenge": "1158201444"}
    assert handshake_challenge(params, "tok") is None


def test_the_handshake_refuses_a_mode_other_than_subscribe():
    params = {"hub.mode": "unsubscribe", "hub.verify_token": "tok", "hub.challenge": "1158201444"}
    assert handshake_challenge(params, "tok") is None


def test_the_handshake_refuses_a_request_without_a_token():
    assert handshake_challenge({"hub.mode": "subscribe", "hub.challenge": "1"}, "tok") is None


def test_an_empty_configured_verify_token_never_verifies():
    params = {"hub.mode": "subscribe", "hub.verify_token": "", "hub.challenge": "1158201444"}
    assert handshake_challenge(params, "") is None
