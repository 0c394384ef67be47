"""Folding the queued leads into the analytics rollups (migrations 0032, 0033).

Writers pay only for queueing the leads a statement touched: the triggers insert one row per statement and
organization into `analytics_pending_batches`, the lead ids as an array. This module is the consumer. A fold
(`analytics_fold_pending`, in the database) takes one organization's batches, oldest first, deleting them,
and refreshes their leads from the source rows with `analytics_refresh_leads` in the same transaction, so the
rollups keep equal to a rebuild. The organization's advisory lock (`analytics_lock_organization`) serializes
its folds and its rebuild; writers only insert batches, so they never wait for a fold, and what a fold could
not see (written after it began) is in a batch it did not take.

Who folds: the `analytics_fold` job, every minute, for every organization; and each report, for its own
organization and up to `FOLD_ON_READ` leads, before it reads the rollups. So a report shows everything
committed before it was asked for, unless a write of more than `FOLD_ON_READ` leads (a big import) landed in
the last minute; then the job catches up within a run or two.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from sqlalchemy import Connection, Uuid, func, literal, select

from leadcrm.analytics.tables import analytics_pending_batches
from leadcrm.platform.db.transactions import transaction

FOLD_BATCH = 2_000  # leads per transaction of the job (the database function refreshes 2,000 per statement)
FOLD_ON_READ = 20_000  # at most this many of its organization's leads a report folds before reading
JOB_SECONDS = 40.0  # the job's time budget: it runs every minute, and a run that stops early loses nothing


def lock_organization_rollups(conn: Connection, organization_id: uuid.UUID) -> None:
    """The lock every fold and rebuild of the organization's rollups holds, until the transaction ends."""
    conn.execute(select(func.analytics_lock_organization(literal(organization_id, Uuid))))


def fold_pending(conn: Connection, organization_id: uuid.UUID, *, limit: int = FOLD_ON_READ) -> int:
    """Fold up to `limit` of the organization's queued leads into the rollups, in the caller's transaction (one
    statement; an index probe when none is queued); returns how many."""
    folded: int = conn.execute(select(func.analytics_fold_pending(literal(organization_id, Uuid), limit))).scalar_one()
    return folded


def run_fold_job(*, seconds: float = JOB_SECONDS, clock: Callable[[], float] = time.monotonic) -> dict[str, int]:
    """The `analytics_fold` job: every organization's queue, FOLD_BATCH leads per transaction, until all are
    folded or the time budget is spent (the next run carries on)."""
    deadline = clock() + seconds
    with transaction() as conn:
        organizations = list(conn.execute(select(analytics_pending_batches.c.organization_id).distinct()).scalars())
    folded = 0
    for organization_id in organizations:
        while clock() < deadline:
            with transaction() as conn:
                taken = fold_pending(conn, organization_id, limit=FOLD_BATCH)
            folded += taken
            if taken < FOLD_BATCH:
                break
    with transaction() as conn:
        left = conn.execute(
            select(func.coalesce(func.sum(func.cardinality(analytics_pending_batches.c.lead_ids)), 0))
        ).scalar_one()
    return {"organizations": len(organizations), "folded": folded, "pending": left}
