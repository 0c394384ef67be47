"""Idempotency-Key: a replay answers what the first request answered; the same key with another body is a 422.

The key is claimed by an INSERT in the same transaction as the write it protects. A concurrent request
with the same key blocks on that row until the first commits (then replays it) or rolls back (then
claims it itself), so two racing requests never both create.

A stored answer is replayed for at least REPLAY_WINDOW (24 hours, as Stripe and the IETF draft's examples
keep keys); the `retention_cleanup` job deletes it after that, and the key may then start a new request.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.platform.errors import BadRequest, Unprocessable
from leadcrm.platform.retention import Retention
from leadcrm.platform.tables import idempotency_keys

MAX_KEY_LENGTH = 255
REPLAY_WINDOW = timedelta(hours=24)
RETENTION = Retention(
    idempotency_keys,
    idempotency_keys.c.created_at,
    REPLAY_WINDOW,
    "a client retries within minutes; a day covers an offline device and a retried job",
)


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: dict[str, Any]


def request_fingerprint(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def claim(conn: Connection, scope: str, key: str, fingerprint: str) -> StoredResponse | None:
    """None when this request owns the key (go on and do the work), else the first request's answer."""
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise BadRequest(
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters.", code="INVALID_IDEMPOTENCY_KEY"
        )
    claimed = conn.execute(
        pg_insert(idempotency_keys)
        .values(scope=scope, key=key, request_hash=fingerprint, response_status=0, response_body={})
        .on_conflict_do_nothing()
        .returning(idempotency_keys.c.key)
    ).first()
    if claimed:
        return None
    row = conn.execute(
        select(
            idempotency_keys.c.request_hash, idempotency_keys.c.response_status, idempotency_keys.c.response_body
        ).where(idempotency_keys.c.scope == scope, idempotency_keys.c.key == key)
    ).one()
    if row.request_hash != fingerprint:
        raise Unprocessable(
            "This Idempotency-Key was already used with a different request body.", code="IDEMPOTENCY_KEY_REUSED"
        )
    return StoredResponse(status=row.response_status, body=row.response_body)


def remember(conn: Connection, scope: str, key: str, response: StoredResponse) -> None:
    conn.execute(
        update(idempotency_keys)
        .where(idempotency_keys.c.scope == scope, idempotency_keys.c.key == key)
        .values(response_status=response.status, response_body=response.body)
    )
