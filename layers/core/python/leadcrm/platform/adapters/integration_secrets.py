"""Access tokens of integration connections, one Secrets Manager secret per connected account.

The secret's name follows from the account alone (`<prefix><provider>/<external account id>`, e.g.
`leadcrm/integrations/meta_lead_ads/<page id>`): one account has at most one active connection (a unique
index), and the graph_fetch function, which has no database, finds a page's token by the page id of the
delivery. The database keeps only the secret's ARN. Reads go through Powertools Parameters and are kept for
MAX_AGE_SECONDS (a reconnect writes a new value; a stale token merely fails the Graph call, and the message
is retried); this process forgets what it cached whenever it writes or deletes a token.
"""

from __future__ import annotations

import json
import os

from leadcrm.platform.adapters.aws import client
from leadcrm.platform.adapters.secrets import CachedSecrets, SecretNotFound

DEFAULT_PREFIX = "leadcrm/integrations/"
MAX_AGE_SECONDS = 300

_tokens = CachedSecrets(MAX_AGE_SECONDS)


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
    _tokens.forget()
    return str(response["ARN"])


def read_account_token(provider: str, external_account_id: str) -> str | None:
    """The account's token, or None when it has no secret (never connected, or disconnected)."""
    try:
        return read_access_token(secret_name(provider, external_account_id))
    except SecretNotFound:
        return None


def read_access_token(secret_id: str) -> str:
    """The token of a secret (name or ARN), kept for MAX_AGE_SECONDS. SecretNotFound when there is none; a
    missing secret is not cached, so a page connected a moment ago is served at once."""
    return str(json.loads(_tokens.get(secret_id))["accessToken"])


def delete_access_token(secret_arn: str) -> None:
    """Gone at once, without a recovery window: a disconnected page's token must not linger anywhere."""
    client("secretsmanager").delete_secret(SecretId=secret_arn, ForceDeleteWithoutRecovery=True)
    _tokens.forget()


def forget_cached_tokens() -> None:
    """Drop this process's cached tokens (others expire within MAX_AGE_SECONDS)."""
    _tokens.forget()
