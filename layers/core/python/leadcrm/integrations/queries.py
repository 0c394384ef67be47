"""Outbound webhooks' reads: a subscription's delivery log, newest first."""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, select

from leadcrm.integrations.deliveries import DELIVERY_COLUMNS
from leadcrm.integrations.tables import webhook_deliveries
from leadcrm.platform.db.pages import Page, newest_first_page


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
    return newest_first_page(
        conn, query, webhook_deliveries.c.created_at, webhook_deliveries.c.id, limit=limit, cursor=cursor
    )
