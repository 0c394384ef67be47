"""Secrets through Powertools Parameters (moto's Secrets Manager): each reader keeps a value for five
minutes, so a rotation reaches a warm container within that time and not before; a missing secret is never
cached; `forget()` empties one reader's cache."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from leadcrm.leads import pseudonym_tokens
from leadcrm.platform import mail_keys
from leadcrm.platform.adapters import integration_secrets
from leadcrm.platform.adapters.secrets import CachedSecrets, SecretNotFound
from tests.support.aws import aws_client
from webhooks import secrets as webhook_secrets

FIVE_MINUTES = timedelta(minutes=5)


class _Clock:
    """Powertools stamps each cached value with datetime.now(); this moves its idea of now forward."""

    def __init__(self) -> None:
        self.ahead = timedelta()

    def advance(self, by: timedelta) -> None:
        self.ahead += by


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    from aws_lambda_powertools.utilities.parameters import base

    moved = _Clock()

    class _Now(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime.now(tz) + moved.ahead

    monkeypatch.setattr(base, "datetime", _Now)
    return moved


@pytest.fixture(autouse=True)
def _fresh_readers() -> Iterator[None]:
    readers = (webhook_secrets.forget, integration_secrets.forget_cached_tokens, pseudonym_tokens.forget,
               mail_keys.forget)  # fmt: skip
    for forget in readers:
        forget()
    yield
    for forget in readers:
        forget()


def _secret(name: str, value: str) -> str:
    return aws_client("secretsmanager").create_secret(Name=name, SecretString=value)["ARN"]


def _rotate(arn: str, value: str) -> None:
    aws_client("secretsmanager").put_secret_value(SecretId=arn, SecretString=value)


def test_a_value_is_served_from_the_cache_until_its_max_age_has_passed(clock):
    arn = _secret("leadcrm/test/one", "first")
    cache = CachedSecrets(max_age_seconds=300)
    assert cache.get(arn) == "first"
    _rotate(arn, "second")
    clock.advance(FIVE_MINUTES - timedelta(seconds=1))
    assert cache.get(arn) == "first"
    clock.advance(timedelta(seconds=2))
    assert cache.get(arn) == "second"


def test_forget_drops_the_cached_value_at_once():
    arn = _secret("leadcrm/test/two", "first")
    cache = CachedSecrets(max_age_seconds=300)
    assert cache.get(arn) == "first"
    _rotate(arn, "second")
    cache.forget()
    assert cache.get(arn) == "second"


def test_one_readers_forget_leaves_another_readers_cache_alone():
    arn = _secret("leadcrm/test/three", "first")
    one, other = CachedSecrets(max_age_seconds=300), CachedSecrets(max_age_seconds=300)
    assert one.get(arn) == other.get(arn) == "first"
    _rotate(arn, "second")
    one.forget()
    assert (one.get(arn), other.get(arn)) == ("second", "first")


def test_a_missing_secret_is_secret_not_found_and_is_not_cached():
    cache = CachedSecrets(max_age_seconds=300)
    with pytest.raises(SecretNotFound):
        cache.get("leadcrm/test/later")
    _secret("leadcrm/test/later", "now-it-exists")
    assert cache.get("leadcrm/test/later") == "now-it-exists"


def test_any_other_failure_is_the_sdks_own_error():
    arn = _secret("leadcrm/test/deleted", "value")
    aws_client("secretsmanager").delete_secret(SecretId=arn, RecoveryWindowInDays=7)
    with pytest.raises(ClientError) as failed:
        CachedSecrets(max_age_seconds=300).get(arn)
    assert failed.value.response["Error"]["Code"] == "InvalidRequestException"


def test_the_webhook_receivers_meta_secret_is_rotated_within_five_minutes(monkeypatch, clock):
    arn = _secret("leadcrm/meta", json.dumps({"appSecret": "old", "verifyToken": "token"}))
    monkeypatch.setenv("META_SECRET_ARN", arn)
    assert webhook_secrets.meta_secrets().app_secret == "old"
    _rotate(arn, json.dumps({"appSecret": "new", "verifyToken": "token"}))
    assert webhook_secrets.meta_secrets().app_secret == "old"
    clock.advance(FIVE_MINUTES + timedelta(seconds=1))
    assert webhook_secrets.meta_secrets().app_secret == "new"


def test_without_an_arn_the_meta_secrets_come_from_the_environment_as_they_are_now(monkeypatch):
    monkeypatch.delenv("META_SECRET_ARN", raising=False)
    monkeypatch.setenv("META_APP_SECRET", "local-one")
    monkeypatch.setenv("META_VERIFY_TOKEN", "local-token")
    assert webhook_secrets.meta_secrets() == webhook_secrets.MetaSecrets("local-one", "local-token")
    monkeypatch.setenv("META_APP_SECRET", "local-two")
    assert webhook_secrets.meta_secrets().app_secret == "local-two"


def test_a_reconnected_accounts_new_token_is_read_at_once_by_the_process_that_wrote_it():
    integration_secrets.store_access_token("meta_lead_ads", "page-1", "first-token")
    assert integration_secrets.read_account_token("meta_lead_ads", "page-1") == "first-token"
    integration_secrets.store_access_token("meta_lead_ads", "page-1", "second-token")
    assert integration_secrets.read_account_token("meta_lead_ads", "page-1") == "second-token"


def test_another_process_sees_a_new_token_within_five_minutes(clock):
    arn = integration_secrets.store_access_token("meta_lead_ads", "page-2", "first-token")
    assert integration_secrets.read_access_token(arn) == "first-token"
    _rotate(arn, json.dumps({"accessToken": "second-token"}))  # written by the API, not by this process
    assert integration_secrets.read_access_token(arn) == "first-token"
    clock.advance(FIVE_MINUTES + timedelta(seconds=1))
    assert integration_secrets.read_access_token(arn) == "second-token"


def test_a_disconnected_account_has_no_token():
    arn = integration_secrets.store_access_token("meta_lead_ads", "page-3", "token")
    assert integration_secrets.read_account_token("meta_lead_ads", "page-3") == "token"
    integration_secrets.delete_access_token(arn)
    assert integration_secrets.read_account_token("meta_lead_ads", "page-3") is None


def test_a_never_connected_account_has_no_token():
    assert integration_secrets.read_account_token("meta_lead_ads", "page-never") is None


@pytest.mark.parametrize(("secret", "key"), [("plain-key", b"plain-key"), ('{"key": "json-key"}', b"json-key"),
                                             ('{"key": ""}', None)])  # fmt: skip
def test_the_pseudonym_key_is_the_secret_string_or_its_json_key(monkeypatch, secret, key):
    monkeypatch.setenv("PSEUDONYM_SECRET_ARN", _secret(f"leadcrm/pseudonym/{uuid.uuid4().hex}", secret))
    assert pseudonym_tokens.master_key() == key


def test_the_pseudonym_key_is_kept_for_five_minutes(monkeypatch, clock):
    arn = _secret("leadcrm/pseudonym", "first-key")
    monkeypatch.setenv("PSEUDONYM_SECRET_ARN", arn)
    assert pseudonym_tokens.master_key() == b"first-key"
    _rotate(arn, "second-key")
    assert pseudonym_tokens.master_key() == b"first-key"
    clock.advance(FIVE_MINUTES + timedelta(seconds=1))
    assert pseudonym_tokens.master_key() == b"second-key"


def test_without_a_secret_the_local_pseudonym_key_or_none(monkeypatch):
    monkeypatch.delenv("PSEUDONYM_SECRET_ARN", raising=False)
    monkeypatch.setenv("PSEUDONYM_KEY", "local-key")
    assert pseudonym_tokens.master_key() == b"local-key"
    monkeypatch.delenv("PSEUDONYM_KEY")
    assert pseudonym_tokens.master_key() is None


def test_rotated_signing_keys_reach_a_warm_container_within_five_minutes(monkeypatch, clock):
    arn = _secret("leadcrm/signing", json.dumps({"keys": ["current"]}))
    monkeypatch.setenv("EMAIL_SIGNING_SECRET_ARN", arn)
    assert mail_keys.signing_keys() == (b"current",)
    _rotate(arn, json.dumps({"keys": ["next", "current"]}))
    assert mail_keys.signing_keys() == (b"current",)
    clock.advance(FIVE_MINUTES + timedelta(seconds=1))
    assert mail_keys.signing_keys() == (b"next", b"current")
