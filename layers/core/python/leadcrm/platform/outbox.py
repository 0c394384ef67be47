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

# The request that wrote an event publishes it within milliseconds, without stamping it; the relay leaves
# younger rows to it, and past this grace publishes every row still unstamped again (its request may have
# died before publishing) and stamps it. A row whose publish failed (last_error), or that its request left to
# the relay (attempts 0: more events than a request publishes, a job's), is the relay's at once.
RELAY_GRACE = timedelta(seconds=30)
RELAY_BATCH = 500
# Stay well inside the task_lifecycle function's timeout; what is left waits for the next run.
RELAY_BUDGET_SECONDS = 20.0
# Published by every relay run, alarmed in infra (Observability): an event that stays unpublished past the
# grace means consumers may not have been told, whatever the cause (bus outage, relay failing, rows stuck on
# one error). Rows within the grace are not counted: their request published them, or is about to.
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
    """Publish events whose transaction has committed (their rows were written with this attempt counted).

    Nothing is written when the bus takes them: the row stays unpublished until the relay, past its grace
    period, publishes it again and stamps it in its batch. Consumers are idempotent (at-least-once is the
    contract), so the second delivery changes nothing, and a Lambda that dies between the commit and this
    call loses no event. Only a failure costs a statement: the error is kept on every row the bus did not
    take (or on all of them when the call failed), which hands the row to the relay without waiting for
    the grace period, and the error is raised."""
    try:
        result = eventbridge.put_events(events)
    except Exception as error:
        with transaction() as conn:
            _keep_errors(conn, {str(e.id): f"{type(error).__name__}: {error}" for e in events}, count_attempt=False)
        raise
    if result.failed:
        with transaction() as conn:
            _keep_errors(conn, result.failed, count_attempt=False)


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
    backlog_age = oldest_unpublished_age_seconds(grace)
    _publish(BACKLOG_AGE_METRIC, backlog_age, MetricUnit.Seconds)
    _publish(PUBLISHED_METRIC, totals["published"], MetricUnit.Count)
    _publish(FAILED_METRIC, totals["failed"], MetricUnit.Count)
    logger.info("outbox relay", extra={**totals, "oldestUnpublishedAgeSeconds": backlog_age})
    return totals


def oldest_unpublished_age_seconds(grace: timedelta = RELAY_GRACE) -> float:
    """How long the oldest event still unpublished past the grace has waited (0 when none): one index read.
    Younger rows are left out: they are their request's, published without a stamp."""
    with transaction() as conn:
        age = conn.execute(
            select(extract("epoch", sql_now() - func.min(outbox.c.occurred_at))).where(
                outbox.c.published_at.is_(None), outbox.c.occurred_at < sql_now() - grace
            )
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
                    # the grace leaves a fresh row to the request that wrote it; one that failed is the relay's,
                    # and so is one its request left to the relay (no attempt counted: a bulk write's, a job's)
                    or_(
                        outbox.c.occurred_at < sql_now() - grace,
                        outbox.c.last_error.is_not(None),
                        outbox.c.attempts == 0,
                    ),
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
    """The relay's batch: stamp what the bus took and count an attempt on every row, two statements at most."""
    if published:
        conn.execute(
            update(outbox)
            .where(outbox.c.id == any_(cast(literal("{" + ",".join(published) + "}"), ARRAY(Uuid))))
            .values(published_at=sql_now(), attempts=outbox.c.attempts + 1, last_error=None)
        )
    if failed:
        _keep_errors(conn, failed, count_attempt=True)


def _keep_errors(conn: Connection, failed: dict[str, str], *, count_attempt: bool) -> None:
    """One statement: each row's error (a request's attempt was counted when its row was written)."""
    errors = recordset(
        "failures",
        "failures",
        [{"id": event_id, "error": error[:1000]} for event_id, error in failed.items()],
        {"id": Uuid, "error": Text},
    )
    attempts = outbox.c.attempts + 1 if count_attempt else outbox.c.attempts
    conn.execute(update(outbox).where(outbox.c.id == errors.c.id).values(attempts=attempts, last_error=errors.c.error))


def undelivered_count(conn: Connection) -> int:
    """Events nobody has handed to the bus yet: left to the relay (attempts 0) or refused (last_error).
    A row its request published is not counted, though the relay re-sends and stamps it later."""
    return conn.execute(
        select(func.count())
        .select_from(outbox)
        .where(outbox.c.published_at.is_(None), or_(outbox.c.attempts == 0, outbox.c.last_error.is_not(None)))
    ).scalar_one()
