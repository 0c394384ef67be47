"""An event that reached its consumer was published: the consumer stamps its outbox row, so the relay does not
send it again.

A request publishes its events right after its commit and writes nothing when the bus takes them (a round trip
saved on every write); the relay re-publishes whatever is still unstamped past its grace, which would otherwise
deliver every event twice. The task_lifecycle queue receives every event LeadCRM publishes (one rule routes the
`leadcrm*` sources to it), so its consumer stamps the row in the unit of work that handles the event: one
UPDATE off the request path, and the relay re-sends only an event no consumer saw within the grace (a Lambda
that died before publishing, a bus outage, a consumer lagging behind). Receipt implies the bus accepted the
event, so every rule on the bus had it too.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, update

from leadcrm.platform.db.now import sql_now
from leadcrm.platform.ids import parse_uuid
from leadcrm.platform.tables import outbox


def acknowledge_delivery(conn: Connection, source: str, our_source: str, detail: dict[str, Any]) -> bool:
    """Stamp the outbox row of an event of ours that a consumer received; True when it stamped one. Events of
    other sources (the platform's) have no row here, and a row already stamped is left as it is."""
    if source != our_source:
        return False
    event_id = parse_uuid(str(detail.get("eventId") or ""))
    if event_id is None:
        return False
    stamped = conn.execute(
        update(outbox)
        .where(outbox.c.id == event_id, outbox.c.published_at.is_(None))
        .values(published_at=sql_now(), last_error=None)
    )
    return stamped.rowcount == 1
