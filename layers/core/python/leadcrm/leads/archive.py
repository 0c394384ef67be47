"""Archiving leads, one or many: a flag (the status and stage stay); idempotent."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update

from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activities
from leadcrm.leads.moves import activity_row, id_list, lock_lead, public_lead, update_lead_row
from leadcrm.leads.rules.moves import distinct_in_order
from leadcrm.leads.tables import leads
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork

# Timeline entry types (lead_activity_events.type) this module writes.
ARCHIVED = "archived"
UNARCHIVED = "unarchived"


def set_archived(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, archived: bool) -> dict[str, Any]:
    """Archives or unarchives the lead (a flag: the status and stage stay); idempotent."""
    conn = uow.connection
    row = lock_lead(conn, actor.organization_id, lead_id)
    if (row["archived_at"] is not None) == archived:
        return public_lead(row)
    updated = update_lead_row(conn, row, {"archived_at": sql_now() if archived else None})
    record_activities(conn, [activity_row(actor, lead_id, ARCHIVED if archived else UNARCHIVED, {})])
    return updated


@dataclass(frozen=True)
class BulkArchiveResult:
    changed: list[uuid.UUID]
    skipped: list[tuple[uuid.UUID, str]]  # reason: "not_found" | "unchanged"


def bulk_set_archived(uow: UnitOfWork, actor: Actor, lead_ids: list[uuid.UUID], archived: bool) -> BulkArchiveResult:
    """Archives or unarchives many leads in a fixed number of statements; ids already so are skipped."""
    conn = uow.connection
    requested = list(distinct_in_order(lead_ids))
    if not requested:
        return BulkArchiveResult(changed=[], skipped=[])
    rows = conn.execute(
        select(leads.c.id, leads.c.archived_at)
        .where(
            leads.c.organization_id == actor.organization_id,
            leads.c.id == func.any(id_list("lead_ids", requested)),
        )
        .order_by(leads.c.id)
        .with_for_update()
    ).all()
    archived_now = {row.id: row.archived_at is not None for row in rows}
    changed: list[uuid.UUID] = []
    skipped: list[tuple[uuid.UUID, str]] = []
    for lead_id in requested:
        if lead_id not in archived_now:
            skipped.append((lead_id, "not_found"))
        elif archived_now[lead_id] == archived:
            skipped.append((lead_id, "unchanged"))
        else:
            changed.append(lead_id)
    if changed:
        conn.execute(
            update(leads)
            .where(
                leads.c.organization_id == actor.organization_id,
                leads.c.id == func.any(id_list("changed_ids", changed)),
            )
            .values(archived_at=sql_now() if archived else None, updated_at=sql_now())
        )
        kind = ARCHIVED if archived else UNARCHIVED
        record_activities(conn, [activity_row(actor, lead_id, kind, {"bulk": True}) for lead_id in changed])
    return BulkArchiveResult(changed=changed, skipped=skipped)
