"""Access tokens of integration connections, one Secrets Manager secret per connected account.

The secret's name follows from the account alone (`<prefix><provider>/<external account id>`, e.g.
`leadcrm/integrations/meta_lead_ads/<page id>`): one account has at most one active connection (a unique
index), and the graph_fetch function, which has no database, finds a page's token by the page id of the
delivery. The database keeps only the secret's ARN. Reads are cached for a few minutes per name (a
reconnect writes a new value; a stale token merely fails the Graph call, and the message is retried).
"""

from __future__ import annotations

import json
import os
import threading
import time

from leadcrm.platform.adapters.aws import client

DEFAULT_PREFIX = "leadcrm/integrations/"
CACHE_SECONDS = 300

_cache: dict[str, tuple[float, str]] = {}
_lock = threading.Lock()


def secret_prefix() -> str:
    """Where connection secrets are named (IAM grants the functions this prefix only)."""
    return os.environ.get("INTEGRATION_SECRET_PREFIX") or DEFAULT_PREFIX


def secret_name(provider: str, external_account_id: str) -> str:
    """The account's secret name: deterministic, so a reader needs only the account id."""
    return f"{secret_prefix()}{provider}/{external_account_id}"


def store_access_token(provider: str, external_account_id: str, access_token: str) -> str:
    """The account's token becomes its secret's current value (created on first connect, overwritten by a
    reconnect or a connect after a disconnect whose deletion is still settling); the secret's ARN. Callers
    serialize writes per account (`ingestion.connections` holds a lock on it)."""
    secretsmanager = client("secretsmanager")
    name = secret_name(provider, external_account_id)
    value = json.dumps({"accessToken": access_token})
    try:
        response = secretsmanager.create_secret(
            Name=name, Description=f"LeadCRM {provider} connection access token", SecretString=value
        )
    except secretsmanager.exceptions.ResourceExistsException:
        response = secretsmanager.put_secret_value(SecretId=name, SecretString=value)
    except secretsmanager.exceptions.InvalidRequestException:
        # The name is still scheduled for deletion (a disconnect a moment ago): bring it back, then write.
        secretsmanager.restore_secret(SecretId=name)
        response = secretsmanager.put_secret_value(SecretId=name, SecretString=value)
    _forget(name)
    return str(response["ARN"])


def read_account_token(provider: str, external_account_id: str) -> str | None:
    """The account's token, or None when it has no secret (never connected, or disconnected)."""
    secretsmanager = client("secretsmanager")
    try:
        return read_access_token(secret_name(provider, external_account_id))
    except secretsmanager.exceptions.ResourceNotFoundException:
        return None


def read_access_token(secret_id: str) -> str:
    """The token of a secret (name or ARN), cached for CACHE_SECONDS. A missing secret is not cached, so a
    page connected a moment ago is served at once."""
    now = time.monotonic()
    with _lock:
        cached = _cache.get(secret_id)
    if cached is not None and now - cached[0] < CACHE_SECONDS:
        return cached[1]
    value = client("secretsmanager").get_secret_value(SecretId=secret_id)["SecretString"]
    token = str(json.loads(value)["accessToken"])
    with _lock:
        _cache[secret_id] = (now, token)
    return token


def delete_access_token(secret_arn: str) -> None:
    """Gone at once, without a recovery window: a disconnected page's token must not linger anywhere."""
    client("secretsmanager").delete_secret(SecretId=secret_arn, ForceDeleteWithoutRecovery=True)
    _forget(secret_arn)


def _forget(secret_id: str) -> None:
    """Drop a cached token by name or ARN (the cache of this process; others expire within CACHE_SECONDS)."""
    name = _name_of(secret_id)
    with _lock:
        for key in [k for k in _cache if _same_secret(_name_of(k), name)]:
            _cache.pop(key, None)


def _name_of(secret_id: str) -> str:
    """The name part of an ARN (with the 6-character suffix Secrets Manager appends), or the name itself."""
    return secret_id.split(":secret:", 1)[-1]


def _same_secret(a: str, b: str) -> bool:
    return a == b or a.startswith(f"{b}-") or b.startswith(f"{a}-")


def forget_cached_tokens() -> None:
    with _lock:
        _cache.clear()
