"""The Meta app secret and verify token: from Secrets Manager (META_SECRET_ARN) or, locally, the environment.

The secret is read through Powertools Parameters and kept for MAX_AGE_SECONDS, so a rotated app secret
reaches warm receivers within five minutes without a redeploy. Without an ARN (the local stack, tests) the
values are META_APP_SECRET and META_VERIFY_TOKEN, read on every call; no Powertools module, no boto3.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from leadcrm.platform.adapters.secrets import CachedSecrets

MAX_AGE_SECONDS = 300

_secrets = CachedSecrets(MAX_AGE_SECONDS)


@dataclass(frozen=True)
class MetaSecrets:
    app_secret: str
    verify_token: str


def meta_secrets() -> MetaSecrets:
    arn = os.environ.get("META_SECRET_ARN")
    if not arn:
        return MetaSecrets(
            app_secret=os.environ.get("META_APP_SECRET", ""), verify_token=os.environ.get("META_VERIFY_TOKEN", "")
        )
    data = json.loads(_secrets.get(arn))
    return MetaSecrets(app_secret=data.get("appSecret", ""), verify_token=data.get("verifyToken", ""))


def forget() -> None:
    """Drop the cached secret (tests switch secrets and environments between runs)."""
    _secrets.forget()
