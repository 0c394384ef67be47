"""Access tokens of integration connections, one Secrets Manager secret per connection.

The database keeps only the secret's ARN. The ingestion function reads a token for every webhook lead, so
reads are cached for a few minutes per ARN (a reconnect writes a new value; a stale token merely fails the
Graph call, and the message is retried).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid

from leadcrm.adapters.aws import client

DEFAULT_PREFIX = "leadcrm/integrations/"
CACHE_SECONDS = 300

_cache: dict[str, tuple[float, str]] = {}
_lock = threading.Lock()


def secret_prefix() -> str:
    """Where connection secrets are named (IAM grants the functions this prefix only)."""
    return os.environ.get("INTEGRATION_SECRET_PREFIX") or DEFAULT_PREFIX


def store_access_token(provider: str, connection_id: uuid.UUID, access_token: str) -> str:
    """A new secret for the connection; its ARN."""
    response = client("secretsmanager").create_secret(
        Name=f"{secret_prefix()}{provider}/{connection_id}",
        Description=f"LeadCRM {provider} connection access token",
        SecretString=json.dumps({"accessToken": access_token}),
    )
    return str(response["ARN"])


def replace_access_token(secret_arn: str, access_token: str) -> None:
    """A reconnect of the same account: the new token becomes the secret's current value."""
    client("secretsmanager").put_secret_value(
        SecretId=secret_arn, SecretString=json.dumps({"accessToken": access_token})
    )
    with _lock:
        _cache.pop(secret_arn, None)


def read_access_token(secret_arn: str) -> str:
    now = time.monotonic()
    with _lock:
        cached = _cache.get(secret_arn)
    if cached is not None and now - cached[0] < CACHE_SECONDS:
        return cached[1]
    value = client("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"]
    token = str(json.loads(value)["accessToken"])
    with _lock:
        _cache[secret_arn] = (now, token)
    return token


def delete_access_token(secret_arn: str) -> None:
    """Gone at once, without a recovery window: a disconnected page's token must not linger anywhere."""
    client("secretsmanager").delete_secret(SecretId=secret_arn, ForceDeleteWithoutRecovery=True)
    with _lock:
        _cache.pop(secret_arn, None)


def forget_cached_tokens() -> None:
    with _lock:
        _cache.clear()
