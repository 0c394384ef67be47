"""Meta webhook rules (Lead Ads and WhatsApp Cloud share them): the verify handshake and the signature.

Pure functions over bytes and strings, so the receiver can check a request before touching anything else.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_PREFIX = "sha256="


def signature_for(app_secret: str, raw_body: bytes) -> str:
    """The X-Hub-Signature-256 value Meta sends for this body."""
    return SIGNATURE_PREFIX + hmac.new(app_secret.encode(), raw_body, hashlib.sha256).hexdigest()


def signature_is_valid(app_secret: str, raw_body: bytes, header: str | None) -> bool:
    """Checked on the raw body, in constant time; a missing or malformed header is simply invalid."""
    if not header or not app_secret or not header.startswith(SIGNATURE_PREFIX):
        return False
    return hmac.compare_digest(signature_for(app_secret, raw_body).encode(), header.strip().encode())


def handshake_challenge(params: dict[str, str], verify_token: str) -> str | None:
    """The challenge to echo when Meta's subscription handshake names our verify token, else None."""
    if params.get("hub.mode") != "subscribe" or not verify_token:
        return None
    offered = params.get("hub.verify_token", "")
    if not hmac.compare_digest(offered.encode(), verify_token.encode()):
        return None
    return params.get("hub.challenge")
