"""The lead's timeline entries (lead_activity_events).

Activity writes are best-effort: they never fail the operation they record. Each runs in a SAVEPOINT, so
a failed insert rolls back only itself and the caller's transaction carries on.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import Connection, insert

from leadcrm.db.tables import lead_activity_events
from leadcrm.ids import uuid7

logger = logging.getLogger(__name__)


def record_activity(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    activity_type: str,
    payload: dict[str, Any] | None = None,
    actor_user_id: uuid.UUID | None = None,
) -> bool:
    """Append one timeline entry; False (logged, not raised) when it could not be written."""
    try:
        with conn.begin_nested():
            conn.execute(
                insert(lead_activity_events).values(
                    id=uuid7(),
                    organization_id=organization_id,
                    lead_id=lead_id,
                    type=activity_type,
                    payload=payload or {},
                    actor_user_id=actor_user_id,
                )
            )
        return True
    except Exception:
        logger.exception("timeline entry not written", extra={"leadId": str(lead_id), "type": activity_type})
        return False


def record_activities(conn: Connection, rows: list[dict[str, Any]]) -> bool:
    """Many timeline entries in one statement (bulk operations); each row has the column names above."""
    if not rows:
        return True
    try:
        with conn.begin_nested():
            conn.execute(insert(lead_activity_events), [{"id": uuid7(), "payload": {}, **row} for row in rows])
        return True
    except Exception:
        logger.exception("bulk timeline entries not written", extra={"count": len(rows)})
        return False
