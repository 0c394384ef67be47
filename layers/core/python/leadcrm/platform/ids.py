"""UUIDv7 identifiers made in the application (RFC 9562).

Time-ordered, so keyset pagination by id follows creation order and B-tree inserts stay local;
74 random bits, so ids are not guessable. No sequence, so RDS Proxy never pins a connection for one.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_last_counter = 0


def uuid7() -> uuid.UUID:
    """A new UUIDv7; ids made in the same millisecond by this process stay ordered (12-bit counter)."""
    global _last_ms, _last_counter
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms > _last_ms:
            _last_ms, _last_counter = now_ms, int.from_bytes(os.urandom(2), "big") & 0x7FF
        else:
            _last_counter += 1
            if _last_counter > 0xFFF:  # counter exhausted: borrow the next millisecond
                _last_ms, _last_counter = _last_ms + 1, 0
        ms, counter = _last_ms, _last_counter
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand_b
    return uuid.UUID(int=value)


def parse_uuid(value: str) -> uuid.UUID | None:
    """The UUID a path segment names, or None when it is not one (callers answer 404, never 500)."""
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return None
