"""Moves outbox rows onto the EventBridge bus: right after commit, and again from the relay job."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import timedelta

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from sqlalchemy import ARRAY, Connection, Text, Uuid, any_, cast, extract, func, literal, or_, select, update

from leadcrm.platform.adapters import eventbridge
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.transactions import transaction
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.retention import Retention
from leadcrm.platform.tables import outbox

logger = logging.getLogger(__name__)

# The request that wrote an event publishes it within milliseconds; the relay leaves younger rows to it.
RELAY_GRACE = timedelta(seconds=30)
RELAY_BATCH = 500
# Stay well inside the task_lifecycle function's timeout; what is left waits for the next run.
RELAY_BUDGET_SECONDS = 20.0
# Published by every relay run, alarmed in infra (Observability): an event that stays unpublished means
# consumers are not told, whatever the cause (bus outage, relay failing, rows stuck on one error).
METRICS_NAMESPACE = "LeadCRM"
BACKLOG_AGE_METRIC = "OutboxOldestUnpublishedAgeSeconds"
# How much each run did, as counts per run (0 included).
PUBLISHED_METRIC = "OutboxEventsRelayed"
FAILED_METRIC = "OutboxRelayFailures"
# A published row is kept a week, for looking back at what was sent (consumers deduplicate on their own
# natural keys, never on this table); the `retention_cleanup` job deletes it after. Unpublished rows have no
# published_at and are never deleted.
PUBLISHED_KEPT_FOR = timedelta(days=7)
RETENTION = Retention(
    outbox, outbox.c.published_at, PUBLISHED_KEPT_FOR, "what was published, for a week of looking back"
)


def publish_committed(events: Sequence[DomainEvent]) -> None:
    """Publish events whose transaction has committed and stamp the ones the bus accepted. When the bus
    refuses the call (an outage, throttling, once botocore's own retries are spent) the attempt is counted on
    every row before the error is raised: the rows stay unpublished, and the relay takes a row that has
    been tried without waiting for RELAY_GRACE (its writer is done with it)."""
    try:
        result = eventbridge.put_events(events)
    except Exception as error:
        with transaction() as conn:
            _mark(conn, [], {str(e.id): f"{type(error).__name__}: {error}" for e in events})
        raise
    with transaction() as conn:
        _mark(conn, result.published, result.failed)


def relay_unpublished(
    grace: timedelta = RELAY_GRACE, batch: int = RELAY_BATCH, budget_seconds: float = RELAY_BUDGET_SECONDS
) -> dict[str, int]:
    """Re-publish rows left behind (a Lambda that died between commit and publish, a bus outage, a bulk
    operation's events), batch after batch until none is left or the time budget is spent.

    Rows are locked with SKIP LOCKED, so two relays never send the same row at once. Consumers still
    deduplicate on the event id: at-least-once is the contract.
    """
    totals = {"published": 0, "failed": 0}
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        result = _relay_batch(grace, batch)
        totals["published"] += len(result.published)
        totals["failed"] += len(result.failed)
        if len(result.published) + len(result.failed) < batch or result.failed:
            break  # drained, or the bus is failing: the next run tries again
    backlog_age = oldest_unpublished_age_seconds()
    _publish(BACKLOG_AGE_METRIC, backlog_age, MetricUnit.Seconds)
    _publish(PUBLISHED_METRIC, totals["published"], MetricUnit.Count)
    _publish(FAILED_METRIC, totals["failed"], MetricUnit.Count)
    logger.info("outbox relay", extra={**totals, "oldestUnpublishedAgeSeconds": backlog_age})
    return totals


def oldest_unpublished_age_seconds() -> float:
    """How long the oldest unpublished event has waited (0 when none waits): one index read."""
    with transaction() as conn:
        age = conn.execute(
            select(extract("epoch", sql_now() - func.min(outbox.c.occurred_at))).where(outbox.c.published_at.is_(None))
        ).scalar_one()
    return max(float(age), 0.0) if age is not None else 0.0


def _publish(metric: str, value: float, unit: MetricUnit) -> None:
    """One EMF line; a value every run (0 included), so a relay that stops reporting is seen too."""
    try:
        with single_metric(name=metric, unit=unit, value=value, namespace=METRICS_NAMESPACE):
            pass
    except Exception:  # measuring must never fail the relay
        logger.warning("metric not emitted", extra={"metric": metric})


def _relay_batch(grace: timedelta, batch: int) -> eventbridge.PublishResult:
    with transaction() as conn:
        rows = (
            conn.execute(
                select(outbox)
                .where(
                    outbox.c.published_at.is_(None),
                    # the grace leaves a fresh row to the request that wrote it; one it tried is the relay's
                    or_(outbox.c.occurred_at < sql_now() - grace, outbox.c.attempts > 0),
                )
                .order_by(outbox.c.occurred_at)
                .limit(batch)
                .with_for_update(skip_locked=True)
            )
            .mappings()
            .all()
        )
        if not rows:
            return eventbridge.PublishResult(published=[], failed={})
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
    return result


def _mark(conn: Connection, published: list[str], failed: dict[str, str]) -> None:
    """Stamp what the bus took and count an attempt on the rest: two statements at most, any batch size."""
    if published:
        conn.execute(
            update(outbox)
            .where(outbox.c.id == any_(cast(literal("{" + ",".join(published) + "}"), ARRAY(Uuid))))
            .values(published_at=sql_now(), attempts=outbox.c.attempts + 1, last_error=None)
        )
    if failed:
        errors = recordset(
            "failures",
            "failures",
            [{"id": event_id, "error": error[:1000]} for event_id, error in failed.items()],
            {"id": Uuid, "error": Text},
        )
        conn.execute(
            update(outbox)
            .where(outbox.c.id == errors.c.id)
            .values(attempts=outbox.c.attempts + 1, last_error=errors.c.error)
        )


def unpublished_count(conn: Connection) -> int:
    return conn.execute(select(func.count()).select_from(outbox).where(outbox.c.published_at.is_(None))).scalar_one()
