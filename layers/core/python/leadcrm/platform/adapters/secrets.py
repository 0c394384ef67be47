"""Secrets Manager values through Powertools Parameters, cached for `max_age` seconds per reader.

Each reader (the Meta app secret, connection tokens, the pseudonym key, the mail signing keys) owns one
`CachedSecrets`: a Powertools `SecretsProvider` whose cache keeps each value for `max_age` seconds, so a
rotated secret reaches warm containers within that time without a redeploy, and a reader's `forget()`
empties its own cache only. A failed read (a missing secret included) is never cached.

The provider runs on our one Secrets Manager client (leadcrm.platform.adapters.aws: region, retries,
timeouts, the endpoint of the local stack). Powertools' parameters module imports boto3 (~100 ms), so it
is imported on the first read of a secret, never by a function whose values come from the environment.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from leadcrm.platform.adapters.aws import client, error_code

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider


class SecretNotFound(LookupError):
    """Secrets Manager has no such secret (never created, or deleted)."""


class CachedSecrets:
    def __init__(self, max_age_seconds: int) -> None:
        self.max_age_seconds = max_age_seconds
        self._provider: SecretsProvider | None = None
        self._lock = threading.Lock()

    def get(self, secret_id: str) -> str:
        """The secret's string (by name or ARN), from the cache while it is younger than `max_age_seconds`.
        SecretNotFound when there is no such secret; any other failure is raised as it came."""
        from aws_lambda_powertools.utilities.parameters import GetParameterError

        try:
            value = self._secrets_provider().get(secret_id, max_age=self.max_age_seconds)
        except GetParameterError as error:
            # Powertools wraps every failure; the one raised by the SDK is its context.
            cause = error.__context__
            if cause is not None and error_code(cause) == "ResourceNotFoundException":
                raise SecretNotFound(secret_id) from cause
            if cause is not None:
                raise cause from None
            raise
        return value.decode() if isinstance(value, bytes) else str(value)

    def forget(self) -> None:
        """Drop every cached value of this reader: the next read asks Secrets Manager."""
        with self._lock:
            if self._provider is not None:
                self._provider.clear_cache()

    def _secrets_provider(self) -> SecretsProvider:
        secretsmanager = client("secretsmanager")
        with self._lock:
            # A new client (tests reset them between mocks) means another account or endpoint: start afresh.
            if self._provider is None or self._provider.client is not secretsmanager:
                from aws_lambda_powertools.utilities.parameters import SecretsProvider

                self._provider = SecretsProvider(boto3_client=secretsmanager)
            return self._provider
