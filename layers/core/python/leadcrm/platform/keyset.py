"""Opaque keyset cursors for lists ordered by a few text/uuid columns (campaigns by name, tags by name)."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime

from leadcrm.platform import json_limits
from leadcrm.platform.bounds import instant_in_calendar, offset_in_range
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


def keyset_instant(raw: str) -> datetime:
    """An instant a cursor carries, as this API wrote it (a timestamptz's isoformat): with its offset, within
    the calendar (platform.bounds). A forged one is 400 INVALID_CURSOR, never a statement the driver cannot
    encode (year 1 at +14:00 has no UTC year)."""
    try:
        at = datetime.fromisoformat(raw)
    except ValueError as error:
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR") from error
    if at.tzinfo is None or not offset_in_range(at.utcoffset()) or not instant_in_calendar(at):
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
    return at
