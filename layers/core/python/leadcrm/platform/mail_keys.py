"""What signed mail addresses need: the HMAC keys, the inbound domain and the public API URL.

Keys: `EMAIL_SIGNING_SECRET_ARN` (Secrets Manager; the secret string is JSON `{"keys": ["…", …]}` or one
key as plain text) in AWS, read through Powertools Parameters and kept for MAX_AGE_SECONDS so a rotation
reaches warm containers within five minutes; `EMAIL_SIGNING_KEYS` (comma-separated) otherwise. The first
key signs, every key verifies: to rotate, put the new key first and keep the old one until mail signed
with it no longer gets replies.

Outside Lambda, with neither set (the local stack, tests), a fixed development key is used. Inside Lambda
that would let anyone forge replies, so there it is an error instead (and the functions that sign mail
refuse to start without one: leadcrm.platform.environment.EMAIL_SIGNING_KEY).
"""

from __future__ import annotations

import json
import os

from leadcrm.platform.adapters.secrets import CachedSecrets
from leadcrm.platform.environment import in_lambda

LOCAL_SIGNING_KEY = b"leadcrm-local-email-signing-key"
DEFAULT_INBOUND_DOMAIN = "mail.leadcrm.local"
DEFAULT_PUBLIC_API_URL = "http://127.0.0.1:8000"
MAX_AGE_SECONDS = 300

_secret = CachedSecrets(MAX_AGE_SECONDS)


def inbound_domain() -> str:
    return (os.environ.get("INBOUND_EMAIL_DOMAIN") or DEFAULT_INBOUND_DOMAIN).lower()


def public_api_url() -> str:
    """Where the public unsubscribe route is reached (the HTTP API's URL)."""
    return (os.environ.get("PUBLIC_API_URL") or DEFAULT_PUBLIC_API_URL).rstrip("/")


def signing_keys() -> tuple[bytes, ...]:
    """The keys, the signing one first; never empty."""
    arn = os.environ.get("EMAIL_SIGNING_SECRET_ARN")
    if arn:
        return _keys_from_secret(_secret.get(arn))
    listed = [k.strip() for k in (os.environ.get("EMAIL_SIGNING_KEYS") or "").split(",") if k.strip()]
    if listed:
        return tuple(k.encode() for k in listed)
    if in_lambda():
        raise RuntimeError("EMAIL_SIGNING_SECRET_ARN or EMAIL_SIGNING_KEYS must be set in Lambda")
    return (LOCAL_SIGNING_KEY,)


def signing_key() -> bytes:
    return signing_keys()[0]


def forget() -> None:
    """Drop the cached secret (tests change the environment between runs)."""
    _secret.forget()


def _keys_from_secret(secret: str) -> tuple[bytes, ...]:
    try:
        parsed = json.loads(secret)
    except ValueError:
        parsed = secret
    if isinstance(parsed, dict):
        values = parsed.get("keys") or ([parsed["key"]] if "key" in parsed else [])
    elif isinstance(parsed, list):
        values = parsed
    else:
        values = [str(parsed)]
    keys = tuple(str(v).encode() for v in values if str(v).strip())
    if not keys:
        raise RuntimeError("the email signing secret holds no key")
    return keys
