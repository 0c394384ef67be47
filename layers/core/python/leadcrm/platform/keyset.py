"""Opaque keyset cursors for lists ordered by a few text/uuid columns (campaigns by name, tags by name)."""

from __future__ import annotations

import base64
import binascii
import json

from leadcrm.platform import json_limits
from leadcrm.platform.errors import BadRequest


def encode_keyset(values: list[str]) -> str:
    """The cursor naming the last row of a page by its sort key."""
    return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).rstrip(b"=").decode()


def decode_keyset(cursor: str, arity: int) -> list[str]:
    """The sort key a cursor names; 400 INVALID_CURSOR for anything this API did not hand out."""
    try:
        values = json_limits.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, json_limits.JsonRefused) as error:
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR") from error
    if not isinstance(values, list) or len(values) != arity or not all(isinstance(v, str) for v in values):
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
    return values
