"""Qualification's scheduled jobs (the table of every job is leadcrm.wiring)."""

from __future__ import annotations

import logging

from sqlalchemy import (
    select,
    update,
)

from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.transactions import transaction
from leadcrm.qualification.rules.merges import (
    UNDO_WINDOW,
)
from leadcrm.qualification.tables import lead_merges

logger = logging.getLogger(__name__)


def purge_expired_snapshots(batch: int = 1000) -> dict[str, int]:
    """The `merge_snapshot_purge` job: once a merge can no longer be undone, its snapshot (the merged lead's
    details) has no use left and is dropped. The tombstone, the moved ids and the record of who merged stay.
    A batch per statement until none is left."""

    purged = 0
    while True:
        with transaction() as conn:
            expired = (
                select(lead_merges.c.id)
                .where(lead_merges.c.snapshot.is_not(None), lead_merges.c.merged_at < sql_now() - UNDO_WINDOW)
                .order_by(lead_merges.c.merged_at)
                .limit(batch)
                .with_for_update(skip_locked=True)
                .scalar_subquery()
            )
            done = conn.execute(update(lead_merges).where(lead_merges.c.id.in_(expired)).values(snapshot=None)).rowcount
        purged += done
        if done < batch:
            break
    logger.info("merge snapshots purged", extra={"purged": purged})
    return {"purged": purged}
