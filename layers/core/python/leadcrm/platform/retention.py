"""Growing tables kept in check: rows past their retention are deleted in bounded batches.

Some tables only grow: stored Idempotency-Key answers, throttle counters, webhook claims, published outbox
rows. Each owner declares how long its rows stay useful (`Retention`, next to the code that writes them),
and the `retention_cleanup` job (leadcrm.wiring) deletes what is older, so a big backlog never holds long
locks nor one long transaction:

- one statement deletes at most `batch` rows (5000), by primary key, with SKIP LOCKED so a row some
  transaction holds is left for the next run; each batch commits on its own;
- the tables take turns, a batch each, until every one is drained or the time budget (20 s, inside
  task_lifecycle's 30 s timeout) is spent; what is left waits for the next run;
- a row whose stamp is NULL is never deleted (an outbox row not yet published has no `published_at`).

Every run publishes how many rows it deleted per table (`LeadCRM/RetentionRowsDeleted`, dimension `table`)
and returns the same counts, with `unfinished`: the tables the budget did not drain.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from time import monotonic

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from sqlalchemy import Column, Connection, Table, delete, select, tuple_

from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.transactions import transaction

logger = logging.getLogger(__name__)

BATCH = 5000
BUDGET_SECONDS = 20.0
METRICS_NAMESPACE = "LeadCRM"
DELETED_METRIC = "RetentionRowsDeleted"


@dataclass(frozen=True)
class Retention:
    """Rows of `table` whose `stamp` is older than `kept_for` are deleted; `why` is what the README says."""

    table: Table
    stamp: Column  # type: ignore[type-arg]
    kept_for: timedelta
    why: str

    @property
    def name(self) -> str:
        return self.table.name


def delete_expired_batch(conn: Connection, retention: Retention, batch: int = BATCH) -> int:
    """At most `batch` expired rows deleted by primary key in one statement; how many. No ORDER BY: which
    expired rows go first does not matter, and without it a stamp that has no index costs a scan that stops
    at the batch's last row instead of a sort of every expired row."""
    key_columns = list(retention.table.primary_key.columns)
    expired = (
        select(*key_columns)
        .where(retention.stamp < sql_now() - retention.kept_for)
        .limit(batch)
        .with_for_update(skip_locked=True)
    )
    key = tuple_(*key_columns) if len(key_columns) > 1 else key_columns[0]
    return int(conn.execute(delete(retention.table).where(key.in_(expired))).rowcount)


def run_cleanup(
    retentions: Sequence[Retention], *, batch: int = BATCH, budget_seconds: float = BUDGET_SECONDS
) -> dict[str, int]:
    """Delete every table's expired rows, a batch per table in turn, until all are drained or the budget is
    spent. The counts per table, and `unfinished`: how many tables still had expired rows left."""
    deleted = {retention.name: 0 for retention in retentions}
    pending = list(retentions)
    deadline = monotonic() + budget_seconds
    while pending and monotonic() < deadline:
        for retention in list(pending):
            with transaction() as conn:
                done = delete_expired_batch(conn, retention, batch)
            deleted[retention.name] += done
            if done < batch:
                pending.remove(retention)
            if monotonic() >= deadline:
                break
    for name, count in deleted.items():
        _publish_deleted(name, count)
    result = {**deleted, "unfinished": len(pending)}
    logger.info("retention cleanup", extra=result)
    return result


def _publish_deleted(table: str, count: int) -> None:
    """One EMF line per table, 0 included: a cleanup that stops running is seen as missing data."""
    try:
        with single_metric(
            name=DELETED_METRIC, unit=MetricUnit.Count, value=count, namespace=METRICS_NAMESPACE
        ) as metric:
            metric.add_dimension(name="table", value=table)
    except Exception:  # measuring must never fail the cleanup
        logger.warning("metric not emitted", extra={"metric": DELETED_METRIC, "table": table})
