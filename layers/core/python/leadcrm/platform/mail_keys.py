"""What signed mail addresses need: the HMAC keys, the inbound domain and the public API URL.

Keys: `EMAIL_SIGNING_SECRET_ARN` (Secrets Manager; the secret string is JSON `{"keys": ["…", …]}` or one
key as plain text) in AWS, read once and cached for five minutes so a rotation reaches warm containers;
`EMAIL_SIGNING_KEYS` (comma-separated) otherwise. The first key signs, every key verifies: to rotate, put
the new key first and keep the old one until mail signed with it no longer gets replies.

Outside Lambda, with neither set (the local stack, tests), a fixed development key is used. Inside Lambda
that would let anyone forge replies, so there it is an error instead.
"""

from __future__ import annotations

import json
import os
import threading
import time

LOCAL_SIGNING_KEY = b"leadcrm-local-email-signing-key"
DEFAULT_INBOUND_DOMAIN = "mail.leadcrm.local"
DEFAULT_PUBLIC_API_URL = "http://127.0.0.1:8000"
CACHE_SECONDS = 300

_lock = threading.Lock()
_cached: tuple[float, tuple[bytes, ...]] | None = None


def inbound_domain() -> str:
    return (os.environ.get("INBOUND_EMAIL_DOMAIN") or DEFAULT_INBOUND_DOMAIN).lower()


def public_api_url() -> str:
    """Where the public unsubscribe route is reached (the HTTP API's URL)."""
    return (os.environ.get("PUBLIC_API_URL") or DEFAULT_PUBLIC_API_URL).rstrip("/")


def signing_keys() -> tuple[bytes, ...]:
    """The keys, the signing one first; never empty."""
    global _cached
    now = time.monotonic()
    cached = _cached
    if cached is not None and now - cached[0] < CACHE_SECONDS:
        return cached[1]
    with _lock:
        keys = _load_keys()
        _cached = (now, keys)
        return keys


def signing_key() -> bytes:
    return signing_keys()[0]


def forget() -> None:
    """Drop the cached keys (tests change the environment between runs)."""
    global _cached
    with _lock:
        _cached = None


def _load_keys() -> tuple[bytes, ...]:
    arn = os.environ.get("EMAIL_SIGNING_SECRET_ARN")
    if arn:
        from leadcrm.platform.adapters.aws import client

        secret = client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
        return _keys_from_secret(secret)
    listed = [k.strip() for k in (os.environ.get("EMAIL_SIGNING_KEYS") or "").split(",") if k.strip()]
    if listed:
        return tuple(k.encode() for k in listed)
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        raise RuntimeError("EMAIL_SIGNING_SECRET_ARN or EMAIL_SIGNING_KEYS must be set in Lambda")
    return (LOCAL_SIGNING_KEY,)


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
