"""Moves outbox rows onto the EventBridge bus: right after commit, and again from the relay job."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import Connection, func, select, update

from leadcrm.adapters import eventbridge
from leadcrm.db.engine import get_engine
from leadcrm.db.tables import outbox
from leadcrm.domain.events import DomainEvent

logger = logging.getLogger(__name__)

# The request that wrote an event publishes it within milliseconds; the relay leaves younger rows to it.
RELAY_GRACE = timedelta(seconds=30)
RELAY_BATCH = 100


def publish_committed(events: Sequence[DomainEvent]) -> None:
    """Publish events whose transaction has committed and stamp the ones the bus accepted."""
    result = eventbridge.put_events(events)
    with get_engine().begin() as conn:
        _mark(conn, result.published, result.failed)


def relay_unpublished(grace: timedelta = RELAY_GRACE, batch: int = RELAY_BATCH) -> dict[str, int]:
    """Re-publish rows left behind (a Lambda that died between commit and publish, a bus outage).

    Rows are locked with SKIP LOCKED, so two relays never send the same row at once. Consumers still
    deduplicate on the event id: at-least-once is the contract.
    """
    with get_engine().begin() as conn:
        rows = (
            conn.execute(
                select(outbox)
                .where(outbox.c.published_at.is_(None), outbox.c.occurred_at < func.now() - grace)
                .order_by(outbox.c.occurred_at)
                .limit(batch)
                .with_for_update(skip_locked=True)
            )
            .mappings()
            .all()
        )
        if not rows:
            return {"published": 0, "failed": 0}
        events = [
            DomainEvent(
                id=row["id"],
                type=row["type"],
                organization_id=row["organization_id"],
                aggregate_id=row["aggregate_id"],
                payload=row["payload"],
                occurred_at=row["occurred_at"],
            )
            for row in rows
        ]
        try:
            result = eventbridge.put_events(events)
        except Exception as error:  # count the attempt; the next run tries again
            logger.exception("outbox relay could not reach the bus")
            result = eventbridge.PublishResult(published=[], failed={str(e.id): repr(error) for e in events})
        _mark(conn, result.published, result.failed)
    logger.info("outbox relay", extra={"published": len(result.published), "failed": len(result.failed)})
    return {"published": len(result.published), "failed": len(result.failed)}


def _mark(conn: Connection, published: list[str], failed: dict[str, str]) -> None:
    if published:
        conn.execute(
            update(outbox)
            .where(outbox.c.id.in_([uuid.UUID(i) for i in published]))
            .values(published_at=func.now(), attempts=outbox.c.attempts + 1, last_error=None)
        )
    for event_id, error in failed.items():
        conn.execute(
            update(outbox)
            .where(outbox.c.id == uuid.UUID(event_id))
            .values(attempts=outbox.c.attempts + 1, last_error=error[:1000])
        )


def unpublished_count(conn: Connection) -> int:
    return conn.execute(select(func.count()).select_from(outbox).where(outbox.c.published_at.is_(None))).scalar_one()
