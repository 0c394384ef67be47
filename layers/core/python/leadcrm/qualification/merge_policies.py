"""What a merge does with each reference to the merged lead: every foreign key to leads.id is found in the
metadata (`lead_references`) and moved by its policy (`policy_for`): moved as is, moved unless the survivor
already has the row, copied (append-only history), or refused (a pseudonymized lead). The generic policy moves
a row and records what it did, so an undo can put it back."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Index,
    Table,
    UniqueConstraint,
    and_,
    delete,
    insert,
    or_,
    select,
    update,
)

from leadcrm.conversations.tables import bulk_email_recipients, conversations, lead_consent_events, lead_consents
from leadcrm.leads.tables import (
    lead_pipeline_placements,
    lead_pseudonyms,
    lead_tag_assignments,
    lead_touches,
    leads,
)
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.schema import all_tables
from leadcrm.platform.ids import uuid7
from leadcrm.work.tables import tasks

OPEN_TASK_STATUSES = ("pending", "in_progress")

CONTACT_LEAD_TASK = "contact_lead"


@dataclass(frozen=True)
class LeadReference:
    """One foreign key column that references leads.id."""

    table: Table
    column: Column

    @property
    def key(self) -> str:
        return f"{self.table.name}.{self.column.name}"

    @property
    def primary_key(self) -> list[Column]:
        return list(self.table.primary_key.columns)

def lead_references() -> list[LeadReference]:
    """Every foreign key to leads.id in the metadata (the leads table's own columns aside), in a stable order."""
    found = []
    for table in all_tables().sorted_tables:
        for fk in table.foreign_keys:
            if fk.column.table is leads and fk.column.name == "id" and table is not leads:
                found.append(LeadReference(table, fk.parent))
    return sorted(found, key=lambda r: r.key)

def _unique_column_sets(table: Table) -> list[tuple[str, set[str]]]:
    sets = []
    for index in table.indexes:
        if isinstance(index, Index) and index.unique:
            sets.append((str(index.name), {c.name for c in index.columns}))
    for constraint in table.constraints:
        if isinstance(constraint, UniqueConstraint):
            sets.append((str(constraint.name), {c.name for c in constraint.columns}))
    return sets

def generic_move_blocker(reference: LeadReference) -> str | None:
    """Why the generic move cannot be applied to this reference (None: it can)."""
    table, column = reference.table, reference.column
    if not reference.primary_key:
        return "the table has no primary key to record moved rows by"
    if "organization_id" not in table.c:
        return "the table has no organization_id to scope the move by"
    if column.primary_key:
        return "the lead column is (part of) the primary key"
    for name, columns in _unique_column_sets(table):
        if column.name in columns:
            return f"the unique index {name} includes the lead column"
    return None

def jsonable(value: Any) -> Any:
    """A value as the merge record keeps it (JSON): ids and instants as text, numbers as text when exact."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value

def _stored_columns(table: Table) -> list[Column]:
    """Columns an INSERT may write (generated columns are PostgreSQL's)."""
    return [c for c in table.columns if c.computed is None]

def row_json(table: Table, row: Mapping[str, Any]) -> dict[str, Any]:
    return {c.name: jsonable(row[c.name]) for c in _stored_columns(table)}

def insert_rows(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Rows kept as JSON put back, in one statement."""
    if not rows:
        return
    columns = _stored_columns(table)
    source = recordset(f"restore_{table.name}", f"restore_{table.name}", rows, {c.name: c.type for c in columns})
    conn.execute(insert(table).from_select([c.name for c in columns], select(*(source.c[c.name] for c in columns))))

@dataclass
class MergeContext:
    conn: Connection
    organization_id: uuid.UUID
    survivor: dict[str, Any]
    merged: dict[str, Any]
    removed: dict[str, list[dict[str, Any]]]  # table → rows a policy deleted (restored by an undo)
    changed: dict[str, list[dict[str, Any]]]  # table → survivor-side rows a policy changed, as they were

    @property
    def survivor_id(self) -> uuid.UUID:
        return self.survivor["id"]

    @property
    def merged_id(self) -> uuid.UUID:
        return self.merged["id"]

    def scoped(self, reference: LeadReference, lead_id: uuid.UUID) -> Any:
        return and_(reference.table.c.organization_id == self.organization_id, reference.column == lead_id)

def generic_move(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """Every row of the merged lead now belongs to the survivor; their primary keys, after the move."""
    rows = ctx.conn.execute(
        update(reference.table)
        .where(ctx.scoped(reference, ctx.merged_id))
        .values({reference.column.name: ctx.survivor_id})
        .returning(*reference.primary_key)
    ).all()
    return [[jsonable(v) for v in row] for row in rows]

def _remove_rows(ctx: MergeContext, reference: LeadReference, condition: Any) -> None:
    """Deletes the merged lead's rows matching `condition`, keeping them for an undo."""
    table = reference.table
    removed = ctx.conn.execute(
        delete(table).where(ctx.scoped(reference, ctx.merged_id), condition).returning(*table.columns)
    ).mappings()
    ctx.removed.setdefault(table.name, []).extend(row_json(table, r) for r in removed)

def _move_unless_survivor_has(ctx: MergeContext, reference: LeadReference, key: str) -> MovedRows:
    """Rows whose `key` the survivor already has are removed (kept for an undo); the others move."""
    table = reference.table
    survivor_keys = select(table.c[key]).where(ctx.scoped(reference, ctx.survivor_id))
    _remove_rows(ctx, reference, table.c[key].in_(survivor_keys))
    return generic_move(ctx, reference)

def move_tag_assignments(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """A tag both leads carry stays once, on the survivor (the primary key is (lead_id, tag_id))."""
    return _move_unless_survivor_has(ctx, reference, "tag_id")

def move_placements(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """One placement per lead and pipeline: a secondary placement in a pipeline the survivor is already in
    (as a secondary placement or as its primary pipeline) is removed; the survivor's stage there stands.
    The merged lead's own primary pipeline is not added to the survivor: its stage is in the snapshot."""
    table = reference.table
    survivor_pipelines = select(table.c.pipeline_id).where(ctx.scoped(reference, ctx.survivor_id))
    _remove_rows(
        ctx,
        reference,
        or_(table.c.pipeline_id.in_(survivor_pipelines), table.c.pipeline_id == ctx.survivor["pipeline_id"]),
    )
    return generic_move(ctx, reference)

def move_consents(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """Per channel, the survivor keeps its row, but a revocation on the merged lead wins over a grant on the
    survivor (the person said no on that channel); the merged lead's row for the channel is removed."""
    conn, table = ctx.conn, reference.table
    merged_rows = {
        r.channel: r
        for r in conn.execute(
            select(table.c.channel, table.c.status, table.c.source).where(ctx.scoped(reference, ctx.merged_id))
        )
    }
    survivor_rows = conn.execute(select(table).where(ctx.scoped(reference, ctx.survivor_id))).mappings().all()
    for row in survivor_rows:
        theirs = merged_rows.get(row["channel"])
        if theirs is not None and theirs.status == "revoked" and row["status"] != "revoked":
            ctx.changed.setdefault(table.name, []).append(row_json(table, row))
            conn.execute(
                update(table)
                .where(table.c.id == row["id"])
                .values(status="revoked", source=theirs.source, updated_at=sql_now())
            )
    return _move_unless_survivor_has(ctx, reference, "channel")

def move_tasks(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """The survivor ends with ONE open follow-up task. When both leads have an open contact task, the merged
    lead's is cancelled (its status kept for an undo) and the survivor's follow-up stands; when only the
    merged lead has one, it moves and the survivor takes its follow-up with the other empty columns."""
    conn = ctx.conn
    open_contact = and_(
        tasks.c.type == CONTACT_LEAD_TASK, tasks.c.status.in_(OPEN_TASK_STATUSES), tasks.c.deleted_at.is_(None)
    )
    # Lead rows are locked already; the task rows come second, the order every follow-up write takes.
    open_tasks = conn.execute(
        select(tasks.c.id, tasks.c.status, tasks.c.linked_lead_id)
        .where(ctx.scoped(reference, ctx.survivor_id) | ctx.scoped(reference, ctx.merged_id), open_contact)
        .order_by(tasks.c.id)
        .with_for_update()
    ).all()
    survivor_has = any(t.linked_lead_id == ctx.survivor_id for t in open_tasks)
    to_cancel = [t for t in open_tasks if t.linked_lead_id == ctx.merged_id] if survivor_has else []
    if to_cancel:
        rows = conn.execute(
            update(tasks)
            .where(tasks.c.id.in_([t.id for t in to_cancel]))
            .values(status="cancelled", cancelled_at=sql_now(), updated_at=sql_now())
            .returning(tasks.c.id, tasks.c.cancelled_at)
        ).all()
        previous = {t.id: t.status for t in to_cancel}
        ctx.changed.setdefault("tasks.cancelled", []).extend(
            {"id": str(r.id), "status": previous[r.id], "cancelledAt": jsonable(r.cancelled_at)} for r in rows
        )
    return generic_move(ctx, reference)

def copy_append_only(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """An append-only ledger (lead_consent_events: a trigger refuses UPDATE) cannot have its rows moved:
    the merged lead's entries are copied onto the survivor (new ids, the same content and times) and the
    originals are removed, kept in the snapshot; an undo puts the originals back and deletes the copies."""
    table = reference.table
    originals = ctx.conn.execute(
        delete(table).where(ctx.scoped(reference, ctx.merged_id)).returning(*table.columns)
    ).mappings()
    kept = [row_json(table, row) for row in originals]
    ctx.removed.setdefault(table.name, []).extend(kept)
    copies = [{**row, "id": str(uuid7()), reference.column.name: str(ctx.survivor_id)} for row in kept]
    insert_rows(ctx.conn, table, copies)
    return [[copy["id"]] for copy in copies]

def move_conversations(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """Threads move like any row. A thread is keyed by its contact (`lead:<id>`, one per organization,
    channel and contact): where the survivor has no thread on that channel, the moved one takes the
    survivor's key, so the next message to the survivor continues it (the old key is kept for an undo);
    where it has one, the moved thread keeps its old key and the survivor's own thread stays the current one."""
    conn, table = ctx.conn, reference.table
    survivor_channels = set(
        conn.execute(select(table.c.channel).where(ctx.scoped(reference, ctx.survivor_id))).scalars()
    )
    moved = generic_move(ctx, reference)
    rekeyed = conn.execute(
        update(table)
        .where(
            table.c.id.in_([uuid.UUID(row[0]) for row in moved]),
            table.c.channel.not_in(survivor_channels) if survivor_channels else table.c.id.is_not(None),
            table.c.contact_key == f"lead:{ctx.merged_id}",
        )
        .values(contact_key=f"lead:{ctx.survivor_id}")
        .returning(table.c.id)
    ).scalars()
    ctx.changed.setdefault(f"{table.name}.contact_key", []).extend(
        {"id": str(thread_id), "contact_key": f"lead:{ctx.merged_id}"} for thread_id in rekeyed
    )
    return moved

def move_bulk_recipients(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """One recipient row per bulk job and lead: the survivor's row for a job both were in stands."""
    return _move_unless_survivor_has(ctx, reference, "job_id")

def move_touches(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """One first touch per lead (its acquisition, analytics.attribution): the survivor keeps its own, and the
    merged lead's first touch moves as a later touch (recorded, so an undo makes it a first touch again)."""
    table = reference.table
    demoted = ctx.conn.execute(
        update(table)
        .where(ctx.scoped(reference, ctx.merged_id), table.c.is_first)
        .values(is_first=False)
        .returning(table.c.id)
    ).scalars()
    ctx.changed.setdefault(f"{table.name}.is_first", []).extend({"id": str(touch_id)} for touch_id in demoted)
    return generic_move(ctx, reference)

def refuse_pseudonymized(ctx: MergeContext, reference: LeadReference) -> MovedRows:
    """Never reached with rows: merging a pseudonymized lead is refused before anything moves."""
    return []

# Policies whose recorded rows are copies: an undo deletes them instead of moving them back.
COPYING_POLICIES = frozenset({copy_append_only})

def policy_for(reference: LeadReference) -> Policy | None:
    """The policy that moves this reference; None when nothing can (the guard test fails on it)."""
    special = SPECIAL_POLICIES.get(reference.table.name)
    if special is not None:
        return special
    return generic_move if generic_move_blocker(reference) is None else None


MovedRows = list[list[Any]]


Policy = Callable[[MergeContext, LeadReference], MovedRows]


# table name → policy. Tables not named here are moved by `generic_move` (see the module docstring).
SPECIAL_POLICIES: dict[str, Policy] = {
    tasks.name: move_tasks,
    lead_tag_assignments.name: move_tag_assignments,
    lead_pipeline_placements.name: move_placements,
    lead_consents.name: move_consents,
    lead_pseudonyms.name: refuse_pseudonymized,
    lead_consent_events.name: copy_append_only,
    conversations.name: move_conversations,
    bulk_email_recipients.name: move_bulk_recipients,
    lead_touches.name: move_touches,
}
