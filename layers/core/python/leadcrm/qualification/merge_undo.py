"""Undoing a merge within its window: the merged lead comes back with what it had, the rows the merge moved
or copied go back, and what arrived since stays with the survivor (spec: merges are reversible)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Table,
    delete,
    select,
    update,
)

from leadcrm.conversations.tables import conversations, lead_consents
from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activities
from leadcrm.leads.tables import (
    lead_touches,
    leads,
)
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.schema import all_tables
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict
from leadcrm.platform.events import DomainEvent
from leadcrm.qualification import scoring
from leadcrm.qualification.merge_policies import (
    LeadReference,
    insert_rows,
    jsonable,
    lead_references,
)
from leadcrm.qualification.queries import merge_row
from leadcrm.qualification.rules.merges import (
    UndoRefusal,
    columns_to_restore,
    undo_refusal,
)
from leadcrm.qualification.tables import lead_merges
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

LEAD_MERGE_UNDONE = "lead.merge_undone"


MERGE_UNDONE_ACTIVITY = "lead_merge_undone"


_UNDO_MESSAGES = {
    UndoRefusal.ALREADY_UNDONE: "This merge was already undone.",
    UndoRefusal.WINDOW_PASSED: "A merge can only be undone within 7 days.",
    UndoRefusal.SURVIVOR_MERGED_SINCE: "The survivor was merged into another lead since: undo that merge first.",
    UndoRefusal.SNAPSHOT_GONE: "This merge can no longer be undone (the survivor's personal data was erased).",
}

@dataclass(frozen=True)
class UndoResult:
    merge_id: uuid.UUID
    survivor_id: uuid.UUID
    restored_id: uuid.UUID
    report: dict[str, Any]


def undo_merge(uow: UnitOfWork, actor: Actor, merge_id: uuid.UUID) -> UndoResult:
    """Puts both leads back as they were before the merge; the caller commits."""
    conn = uow.connection
    org = actor.organization_id
    merge = merge_row(conn, org, merge_id, lock=True)
    refusal = undo_refusal(
        merge["merged_at"],
        clock.now(),
        undone=merge["undone_at"] is not None,
        survivor_moved=merge["survivor_lead_id"] != merge["original_survivor_id"],
        has_snapshot=merge["snapshot"] is not None,
    )
    if refusal is not None:
        raise Conflict(_UNDO_MESSAGES[refusal], code=refusal.value)
    survivor_id, merged_id = merge["survivor_lead_id"], merge["merged_lead_id"]
    survivor = (
        conn.execute(select(leads).where(leads.c.organization_id == org, leads.c.id == survivor_id).with_for_update())
        .mappings()
        .one()
    )
    snapshot = merge["snapshot"]
    restored_lead, let_go = _without_dangling_references(conn, leads, snapshot["mergedLead"])
    insert_rows(conn, leads, [restored_lead])

    references = {r.key: r for r in lead_references()}
    missing: dict[str, list[Any]] = {}
    for key, entry in merge["moved"].items():
        reference = references.get(key)
        if reference is None:  # a table dropped since: nothing to move back
            missing[key] = entry["rows"]
            continue
        if entry.get("copied"):
            back = _delete_copies(conn, org, reference, entry["rows"], survivor_id)
            gone = [row for row in entry["rows"] if tuple(str(v) for v in row) not in back]
        else:
            back = _move_back(conn, org, reference, entry["rows"], survivor_id, merged_id)
            gone = [row for row in entry["rows"] if _pk_text(row, reference, survivor_id, merged_id) not in back]
        if gone:
            missing[key] = gone
    failed_restores = []
    for table_name, rows in snapshot["removed"].items():
        try:
            with conn.begin_nested():
                insert_rows(conn, all_tables().tables[table_name], rows)
        except Exception:  # e.g. a tag deleted since: the rest of the undo stands
            logger.warning("merge undo could not restore removed rows", extra={"table": table_name})
            failed_restores.append(table_name)
    _restore_changed(conn, snapshot["changed"], merged_id)
    columns = columns_to_restore(snapshot["filled"], snapshot["survivorBefore"], jsonable(dict(survivor)))
    if columns.restore:
        conn.execute(
            update(leads)
            .where(leads.c.id == survivor_id, leads.c.organization_id == org)
            .values(**_typed_lead_values(columns.restore), updated_at=sql_now())
        )
    stayed = _arrived_since(conn, org, references, merge, survivor_id)
    report = {
        "stayedWithSurvivor": stayed,
        "missing": missing,
        "keptSurvivorColumns": columns.kept,
        "notRestored": failed_restores,
        "clearedReferences": let_go,
    }
    conn.execute(
        update(lead_merges)
        .where(lead_merges.c.id == merge_id)
        .values(undone_at=sql_now(), undone_by_user_id=actor.user_id, undo_report=report, snapshot=None)
    )
    activity = {"mergeId": str(merge_id), "survivorId": str(survivor_id), "restoredLeadId": str(merged_id)}
    record_activities(
        conn,
        [
            {"organization_id": org, "lead_id": lead_id, "type": MERGE_UNDONE_ACTIVITY, "payload": activity,
             "actor_user_id": actor.user_id}
            for lead_id in (survivor_id, merged_id)
        ],
    )  # fmt: skip
    uow.add_event(
        DomainEvent(
            type=LEAD_MERGE_UNDONE,
            organization_id=org,
            aggregate_id=survivor_id,
            payload={
                **activity,
                "leadId": str(survivor_id),
                "actorUserId": str(actor.user_id) if actor.user_id else None,
            },
        )
    )
    scoring.rescore_leads(conn, org, [survivor_id, merged_id])
    return UndoResult(merge_id, survivor_id, merged_id, report)

def _without_dangling_references(
    conn: Connection, table: Table, row: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The row with references that went away since the merge cleared, as the database would have cleared
    them had the row stayed (only ON DELETE SET NULL references: a campaign or an owner deleted since);
    the columns cleared."""
    cleared = []
    restored = dict(row)
    for fk in table.foreign_keys:
        value = row.get(fk.parent.name)
        if value is None or (fk.ondelete or "").upper() != "SET NULL":
            continue
        target = fk.column
        if conn.execute(select(target).where(target == value)).first() is None:
            restored[fk.parent.name] = None
            cleared.append(fk.parent.name)
    return restored, sorted(cleared)

def _pk_text(row: list[Any], reference: LeadReference, survivor_id: uuid.UUID, merged_id: uuid.UUID) -> tuple:
    """A recorded primary key (taken after the move) as it reads once moved back."""
    names = [c.name for c in reference.primary_key]
    return tuple(
        str(merged_id) if name == reference.column.name and value == str(survivor_id) else str(value)
        for name, value in zip(names, row, strict=True)
    )

def _move_back(
    conn: Connection,
    organization_id: uuid.UUID,
    reference: LeadReference,
    rows: list[list[Any]],
    survivor_id: uuid.UUID,
    merged_id: uuid.UUID,
) -> set[tuple]:
    """The recorded rows that still belong to the survivor go back to the restored lead, in one statement;
    their primary keys (as text) after the move."""
    table, pk = reference.table, reference.primary_key
    source = recordset(
        f"back_{table.name}", f"back_{table.name}", [dict(zip([c.name for c in pk], r, strict=True)) for r in rows],
        {c.name: c.type for c in pk},
    )  # fmt: skip
    moved = conn.execute(
        update(table)
        .where(
            table.c.organization_id == organization_id,
            reference.column == survivor_id,
            *(table.c[c.name] == source.c[c.name] for c in pk),
        )
        .values({reference.column.name: merged_id})
        .returning(*pk)
    ).all()
    return {tuple(str(v) for v in row) for row in moved}

def _delete_copies(
    conn: Connection,
    organization_id: uuid.UUID,
    reference: LeadReference,
    rows: list[list[Any]],
    survivor_id: uuid.UUID,
) -> set[tuple]:
    """The copies a copying policy made on the survivor, deleted; their primary keys (as text)."""
    table, pk = reference.table, reference.primary_key
    source = recordset(
        f"copies_{table.name}", f"copies_{table.name}", [dict(zip([c.name for c in pk], r, strict=True)) for r in rows],
        {c.name: c.type for c in pk},
    )  # fmt: skip
    deleted = conn.execute(
        delete(table)
        .where(
            table.c.organization_id == organization_id,
            reference.column == survivor_id,
            *(table.c[c.name] == source.c[c.name] for c in pk),
        )
        .returning(*pk)
    ).all()
    return {tuple(str(v) for v in row) for row in deleted}

def _restore_changed(conn: Connection, changed: dict[str, list[dict[str, Any]]], merged_id: uuid.UUID) -> None:
    """Survivor-side rows a policy changed go back (while they still hold what the merge wrote), and the
    merged lead's cancelled follow-up task reopens (it is the restored lead's own task again)."""
    for row in changed.get(lead_consents.name, []):
        conn.execute(
            update(lead_consents)
            .where(lead_consents.c.id == uuid.UUID(row["id"]), lead_consents.c.status == "revoked")
            .values(status=row["status"], source=row["source"], updated_at=sql_now())
        )
    for row in changed.get("conversations.contact_key", []):
        conn.execute(
            update(conversations)
            .where(conversations.c.id == uuid.UUID(row["id"]), conversations.c.lead_id == merged_id)
            .values(contact_key=row["contact_key"])
        )
    for row in changed.get(f"{lead_touches.name}.is_first", []):
        conn.execute(
            update(lead_touches)
            .where(lead_touches.c.id == uuid.UUID(row["id"]), lead_touches.c.lead_id == merged_id)
            .values(is_first=True)
        )
    for row in changed.get("tasks.cancelled", []):
        conn.execute(
            update(tasks)
            .where(
                tasks.c.id == uuid.UUID(row["id"]),
                tasks.c.linked_lead_id == merged_id,
                tasks.c.status == "cancelled",
                tasks.c.cancelled_at == datetime.fromisoformat(row["cancelledAt"]),
            )
            .values(status=row["status"], cancelled_at=None, updated_at=sql_now())
        )

def _typed_lead_values(values: dict[str, Any]) -> dict[str, Any]:
    """Lead column values read back from JSON, typed for the UPDATE (instants and ids are text there)."""
    typed: dict[str, Any] = {}
    for name, value in values.items():
        column = leads.c[name]
        if value is not None and isinstance(value, str):
            python_type = getattr(column.type, "python_type", str)
            if python_type is datetime:
                value = datetime.fromisoformat(value)
            elif python_type is uuid.UUID:
                value = uuid.UUID(value)
        typed[name] = value
    return typed

def _arrived_since(
    conn: Connection,
    organization_id: uuid.UUID,
    references: Mapping[str, LeadReference],
    merge: Mapping[str, Any],
    survivor_id: uuid.UUID,
) -> dict[str, list[Any]]:
    """Rows on the survivor now that it did not have before the merge and that the undo did not move back:
    records that reached the survivor since the merge. They stay with it."""
    stayed: dict[str, list[Any]] = {}
    before = merge["survivor_rows"]
    for key, reference in references.items():
        known = {tuple(str(v) for v in row) for row in before.get(key, [])}
        rows = conn.execute(
            select(*reference.primary_key).where(
                reference.table.c.organization_id == organization_id, reference.column == survivor_id
            )
        ).all()
        arrived = [[jsonable(v) for v in row] for row in rows if tuple(str(v) for v in row) not in known]
        if reference.table is lead_merges:
            arrived = [row for row in arrived if row[0] != str(merge["id"])]
        if arrived:
            stayed[key] = arrived
    return stayed

