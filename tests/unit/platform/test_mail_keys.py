"""Where the signing keys come from: a list in the environment, the local development key outside Lambda
only, and the Secrets Manager secret's shapes (one key, or a list for rotation)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from leadcrm.platform import mail_keys


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("EMAIL_SIGNING_SECRET_ARN", "EMAIL_SIGNING_KEYS", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(name, raising=False)
    mail_keys.forget()
    yield
    mail_keys.forget()


def test_listed_keys_sign_with_the_first_and_verify_with_all(monkeypatch):
    monkeypatch.setenv("EMAIL_SIGNING_KEYS", "new-key, old-key")
    assert mail_keys.signing_keys() == (b"new-key", b"old-key")
    assert mail_keys.signing_key() == b"new-key"


def test_outside_lambda_without_configuration_the_development_key_is_used():
    assert mail_keys.signing_keys() == (mail_keys.LOCAL_SIGNING_KEY,)


def test_inside_lambda_a_missing_key_is_an_error_not_the_development_key(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "leadcrm-api")
    with pytest.raises(RuntimeError):
        mail_keys.signing_keys()


@pytest.mark.parametrize(
    ("secret", "keys"),
    [('{"key": "generated"}', (b"generated",)), ('{"keys": ["a", "b"]}', (b"a", b"b")),
     ('["a", "b"]', (b"a", b"b")), ("plain-text-key", (b"plain-text-key",))],
)  # fmt: skip
def test_the_secret_may_hold_one_key_or_a_list(secret, keys):
    assert mail_keys._keys_from_secret(secret) == keys


def test_a_secret_without_a_key_is_an_error():
    with pytest.raises(RuntimeError):
        mail_keys._keys_from_secret('{"keys": []}')


def test_the_inbound_domain_is_compared_lowercased(monkeypatch):
    monkeypatch.setenv("INBOUND_EMAIL_DOMAIN", "Mail.Example.COM")
    assert mail_keys.inbound_domain() == "mail.example.com"
