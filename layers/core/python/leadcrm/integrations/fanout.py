"""The bus's events become deliveries: one row per subscribed endpoint, then handed to the sender at once.

Runs in task_lifecycle's unit of work for every event of a type a subscription can name (`leadcrm.wiring`).
Idempotent: (subscription, event id, type) is unique, so a redelivered event inserts and sends nothing more.
The `webhook_delivery_sweep` job (every minute) hands over what is due: retries whose backoff ended, leases
that ran out, deliveries whose enqueue failed, and those of an endpoint enabled again.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Text, literal, select
from sqlalchemy.dialects.postgresql import ARRAY, insert

from leadcrm.integrations.dispatch import dispatch
from leadcrm.integrations.rules.events import webhook_data, webhook_types
from leadcrm.integrations.tables import webhook_deliveries, webhook_subscriptions
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.transactions import transaction
from leadcrm.platform.ids import parse_uuid

logger = logging.getLogger(__name__)

SWEEP_BATCH = 200
# Delivery ids are derived from (endpoint, event, type): the same event to the same endpoint has the same
# `webhook-id` however often it is fanned out, even when a fan-out whose message went out was rolled back.
DELIVERY_NAMESPACE = uuid.UUID("6f1b7c3e-2a5d-4e8f-9b0c-1d2e3f405162")


def delivery_id(subscription_id: uuid.UUID, event_id: uuid.UUID, webhook_type: str) -> uuid.UUID:
    return uuid.uuid5(DELIVERY_NAMESPACE, f"{subscription_id}:{event_id}:{webhook_type}")


def fan_out(conn: Connection, detail: dict[str, Any]) -> bool:
    """Deliveries of one outbox event (`{eventId, type, organizationId, aggregateId, occurredAt, payload}`) to
    every enabled subscription of its organization that names one of its webhook types; True when it made any."""
    event_id, organization_id = (
        parse_uuid(str(detail.get("eventId") or "")),
        parse_uuid(str(detail.get("organizationId") or "")),
    )
    types = webhook_types(str(detail.get("type") or ""), detail.get("payload") or {})
    if event_id is None or organization_id is None or not types:
        return False
    subscriptions = conn.execute(
        select(webhook_subscriptions.c.id, webhook_subscriptions.c.event_types).where(
            webhook_subscriptions.c.organization_id == organization_id,
            webhook_subscriptions.c.enabled.is_(True),
            webhook_subscriptions.c.event_types.overlap(literal(types, ARRAY(Text))),
        )
    ).all()
    if not subscriptions:
        return False
    occurred_at = _instant(detail.get("occurredAt"))
    rows = [
        {
            "id": delivery_id(subscription_id, event_id, webhook_type),
            "organization_id": organization_id,
            "subscription_id": subscription_id,
            "event_id": event_id,
            "event_type": webhook_type,
            "payload": webhook_data(webhook_type, detail),
            "occurred_at": occurred_at,
            "next_attempt_at": sql_now(),
        }
        for subscription_id, wanted in subscriptions
        for webhook_type in types
        if webhook_type in wanted
    ]
    if not rows:
        return False
    made = (
        conn.execute(
            insert(webhook_deliveries)
            .values(rows)
            .on_conflict_do_nothing(index_elements=["subscription_id", "event_id", "event_type"])
            .returning(webhook_deliveries.c.id)
        )
        .scalars()
        .all()
    )
    dispatch(conn, list(made))
    return bool(made)


def _instant(raw: object) -> datetime | Any:
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw)
        except ValueError:
            pass
    return sql_now()


def run_delivery_sweep(batch: int = SWEEP_BATCH) -> dict[str, int]:
    """Hand over every due delivery of an enabled endpoint (locked, so two sweeps never send one twice)."""
    with transaction() as conn:
        due: list[uuid.UUID] = list(
            conn.execute(
                select(webhook_deliveries.c.id)
                .join(webhook_subscriptions, webhook_subscriptions.c.id == webhook_deliveries.c.subscription_id)
                .where(
                    webhook_deliveries.c.status == "pending",
                    webhook_deliveries.c.next_attempt_at <= sql_now(),
                    webhook_subscriptions.c.enabled.is_(True),
                )
                .order_by(webhook_deliveries.c.next_attempt_at)
                .limit(batch)
                .with_for_update(of=webhook_deliveries, skip_locked=True)
            ).scalars()
        )
        sent = dispatch(conn, due)
    return {"due": len(due), "sent": sent}
