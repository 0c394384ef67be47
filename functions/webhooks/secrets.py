"""The Meta app secret and verify token: from Secrets Manager (META_SECRET_ARN) or, locally, the environment.

Read once and cached for a few minutes, so a rotated secret is picked up without a redeploy.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

CACHE_SECONDS = 300


@dataclass(frozen=True)
class MetaSecrets:
    app_secret: str
    verify_token: str


_cached: tuple[float, MetaSecrets] | None = None


def meta_secrets() -> MetaSecrets:
    global _cached
    now = time.monotonic()
    if _cached is not None and now - _cached[0] < CACHE_SECONDS:
        return _cached[1]
    arn = os.environ.get("META_SECRET_ARN")
    if arn:
        from leadcrm.platform.adapters.aws import client

        data = json.loads(client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])
        secrets = MetaSecrets(app_secret=data.get("appSecret", ""), verify_token=data.get("verifyToken", ""))
    else:
        secrets = MetaSecrets(
            app_secret=os.environ.get("META_APP_SECRET", ""), verify_token=os.environ.get("META_VERIFY_TOKEN", "")
        )
    _cached = (now, secrets)
    return secrets


def forget() -> None:
    global _cached
    _cached = None
