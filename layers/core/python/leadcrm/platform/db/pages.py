"""One newest-first keyset page over (created_at, id): the shape of every log a screen pages back through
(CSV import jobs, a webhook's delivery log)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Connection, Select, Uuid, literal, tuple_

from leadcrm.platform.errors import BadRequest
from leadcrm.platform.keyset import decode_keyset, encode_keyset, keyset_instant


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None


def newest_first_page(
    conn: Connection,
    query: Select[Any],
    created_at: Column[Any],
    row_id: Column[Any],
    *,
    limit: int,
    cursor: str | None,
) -> Page:
    """`query`'s rows newest first, `limit` of them after the row `cursor` names; the query selects
    `created_at` and `id`. A cursor this API did not write is 400 INVALID_CURSOR."""
    if cursor:
        raw_created_at, raw_id = decode_keyset(cursor, 2)
        try:
            after = tuple_(literal(keyset_instant(raw_created_at)), literal(uuid.UUID(raw_id), Uuid))
        except ValueError as error:
            raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR") from error
        query = query.where(tuple_(created_at, row_id) < after)
    rows = conn.execute(query.order_by(created_at.desc(), row_id.desc()).limit(limit + 1)).mappings().all()
    items = [dict(r) for r in rows[:limit]]
    more = len(rows) > limit
    next_cursor = encode_keyset([items[-1]["created_at"].isoformat(), str(items[-1]["id"])]) if more else None
    return Page(items, next_cursor)
