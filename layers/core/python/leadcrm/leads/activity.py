"""The lead's timeline entries (lead_activity_events).

Activity writes are best-effort: they never fail the operation they record. One in a statement of its own
runs in a SAVEPOINT, so a failed insert rolls back only itself and the caller's transaction carries on.
Entries carried by the write they record (`activities_insert`, a data-modifying CTE of it: no round trips
of their own) are built so that they cannot fail there: new ids, code-defined types, the locked lead.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import Connection, Text, Uuid, insert, select
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.leads.tables import lead_activity_events
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

_COLUMNS = {
    "id": Uuid,
    "organization_id": Uuid,
    "lead_id": Uuid,
    "type": Text,
    "payload": JSONB,
    "actor_user_id": Uuid,
}


def record_activity(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    activity_type: str,
    payload: dict[str, Any] | None = None,
    actor_user_id: uuid.UUID | None = None,
) -> bool:
    """Append one timeline entry; False (logged, not raised) when it could not be written."""
    return record_activities(
        conn,
        [
            {
                "organization_id": organization_id,
                "lead_id": lead_id,
                "type": activity_type,
                "payload": payload or {},
                "actor_user_id": actor_user_id,
            }
        ],
    )


def activities_insert(rows: list[dict[str, Any]], name: str = "activities") -> Any:
    """Many timeline entries as one INSERT for another statement to carry as a CTE (`name`: its parameter's,
    unique in that statement); each row names the columns above."""
    source = recordset(
        name, name, [{"id": uuid7(), "payload": {}, "actor_user_id": None, **row} for row in rows], _COLUMNS
    )
    # Core insert, not postgresql.insert: SQLAlchemy caches its compiled form (the dialect's Insert it does
    # not), and nothing can conflict here (new ids; the one unique index needs a source_event_id).
    return insert(lead_activity_events).from_select(list(_COLUMNS), select(*(source.c[n] for n in _COLUMNS)))


def record_activities(conn: Connection, rows: list[dict[str, Any]]) -> bool:
    """Many timeline entries in ONE statement (any number of rows); each row names the columns above."""
    if not rows:
        return True
    source = recordset(
        "activities",
        "activities",
        [{"id": uuid7(), "payload": {}, "actor_user_id": None, **row} for row in rows],
        _COLUMNS,
    )
    statement = insert(lead_activity_events).from_select(list(_COLUMNS), select(*(source.c[n] for n in _COLUMNS)))
    try:
        with conn.begin_nested():
            conn.execute(statement)
        return True
    except Exception:
        logger.exception("timeline entries not written", extra={"count": len(rows)})
        return False
