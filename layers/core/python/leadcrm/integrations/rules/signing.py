"""The Standard Webhooks signature scheme (https://www.standardwebhooks.com), which receivers verify.

Headers: `webhook-id` (the delivery id: the same on every retry and replay, for deduplication),
`webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature: v1,<base64 HMAC-SHA256>` over
`{id}.{timestamp}.{body}` with the subscription's secret. The secret is `whsec_` + base64 of 32 random bytes;
the HMAC key is those bytes (the base64 after the prefix, decoded), as the Standard Webhooks libraries read it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(secret: str, delivery_id: str, timestamp: int, body: str) -> str:
    """`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`."""
    digest = hmac.new(secret_key(secret), f"{delivery_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(secret: str, delivery_id: str, timestamp: int, body: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, delivery_id, timestamp, body),
    }


def verify(secret: str, headers: dict[str, str], body: str) -> bool:
    """What a receiver does (and our tests): any `v1,` signature in the space-separated list matches."""
    expected = signature(secret, headers["webhook-id"], int(headers["webhook-timestamp"]), body)
    return any(hmac.compare_digest(expected, given) for given in headers["webhook-signature"].split(" "))
