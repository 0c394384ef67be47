"""Outbound webhooks' reads: a subscription's delivery log, newest first."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Uuid, literal, select, tuple_

from leadcrm.integrations.deliveries import DELIVERY_COLUMNS
from leadcrm.integrations.tables import webhook_deliveries
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.keyset import decode_keyset, encode_keyset, keyset_instant


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None


def list_deliveries(
    conn: Connection,
    organization_id: uuid.UUID,
    subscription_id: uuid.UUID,
    *,
    status: str | None,
    limit: int,
    cursor: str | None,
) -> Page:
    """Keyset on (created_at, id); status, attempts, latency, response code; never a body."""
    query = select(*DELIVERY_COLUMNS).where(
        webhook_deliveries.c.organization_id == organization_id,
        webhook_deliveries.c.subscription_id == subscription_id,
    )
    if status is not None:
        query = query.where(webhook_deliveries.c.status == status)
    if cursor:
        raw_created_at, raw_id = decode_keyset(cursor, 2)
        try:
            after = tuple_(literal(keyset_instant(raw_created_at)), literal(uuid.UUID(raw_id), Uuid))
        except ValueError as error:
            raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR") from error
        query = query.where(tuple_(webhook_deliveries.c.created_at, webhook_deliveries.c.id) < after)
    rows = conn.execute(
        query.order_by(webhook_deliveries.c.created_at.desc(), webhook_deliveries.c.id.desc()).limit(limit + 1)
    ).mappings()
    items = [dict(r) for r in rows]
    more = len(items) > limit
    items = items[:limit]
    next_cursor = encode_keyset([items[-1]["created_at"].isoformat(), str(items[-1]["id"])]) if more else None
    return Page(items, next_cursor)
