"""Merging a duplicate lead into a survivor, undoing a merge, and the tombstone a merged lead leaves.

Which rows move: every row of every table with a foreign key to leads.id, found in the SQLAlchemy metadata
(`lead_references`), so the tables other areas add (messages, attributions, deals, tickets, …) move too
without this module naming them. Each reference is moved by the generic move (UPDATE … SET <column> =
survivor, RETURNING the primary key, scoped by organization) unless `SPECIAL_POLICIES` names its table.
The generic move applies only where it cannot break a constraint: the table has a primary key and an
organization_id, and no unique index or constraint includes the lead column (`generic_move_blocker`).
tests/integration/test_merge_policies.py fails for any reference that is neither movable generically nor
covered by a policy, so a new table with a unique per-lead key gets a decision before it can be merged.

Special policies (each documented at its function):
- tasks: the survivor ends with ONE open follow-up task (tasks_open_contact_lead_unique_idx): when both
  leads have one, the merged lead's is cancelled, then every task moves.
- lead_tag_assignments, lead_pipeline_placements: a row the survivor already has (same tag; a placement in
  a pipeline the survivor is already in, its primary one included) is removed and kept in the snapshot;
  the rest move.
- lead_consents: per channel the more restrictive answer wins (a revocation is honoured whatever lead it
  was given on); the merged lead's row for a channel the survivor has is removed and kept in the snapshot.
- lead_pseudonyms: a pseudonymized lead is never merged (MERGE refused before anything moves).
- the leads columns: empty survivor columns are filled from the merged lead (qualification.rules.merges).

Then the merged lead's row is deleted: a `lead_merges` row is its tombstone (`survivor_of` answers the
survivor for its id, so a GET of the merged id answers with the survivor), it is out of every list, queue,
dedup and analytics query by construction. The merge row records who and when, the moved rows' primary
keys per table, the survivor's own rows before the merge, and a snapshot (the merged lead's row, rows a
policy removed, the survivor columns filled) that an undo within 7 days needs. Undo restores both leads as
they were; rows that arrived on the survivor since the merge stay there and are reported, and so are moved
rows that no longer exist and filled columns edited since.

Concurrency: both leads are locked FOR UPDATE in id order in one statement, so two merges over the same
pair (either way round) queue instead of deadlocking, and every other lead write queues behind the merge.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
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
    func,
    insert,
    or_,
    select,
    update,
)

from leadcrm.conversations.tables import bulk_email_recipients, conversations, lead_consent_events, lead_consents
from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activities
from leadcrm.leads.identity import organization_region
from leadcrm.leads.rules.identity import is_same_lead_person, last_seven_digits, person_key
from leadcrm.leads.tables import (
    lead_activity_events,
    lead_pipeline_placements,
    lead_pseudonyms,
    lead_tag_assignments,
    lead_touches,
    leads,
)
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.schema import all_tables
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.qualification import scoring
from leadcrm.qualification.rules.merges import (
    UNDO_WINDOW,
    MergeRefusal,
    UndoRefusal,
    columns_to_restore,
    filled_values,
    is_won,
    merge_refusal,
    undo_refusal,
)
from leadcrm.qualification.tables import lead_merges
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

LEAD_MERGED = "lead.merged"
LEAD_MERGE_UNDONE = "lead.merge_undone"
MERGED_ACTIVITY = "lead_merged"
MERGE_UNDONE_ACTIVITY = "lead_merge_undone"
OPEN_TASK_STATUSES = ("pending", "in_progress")
CONTACT_LEAD_TASK = "contact_lead"
SUGGESTION_LIMIT = 20


# -- the references to leads -----------------------------------------------------------------------------


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


# -- the merge context and snapshot helpers ---------------------------------------------------------------


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


def _row_json(table: Table, row: Mapping[str, Any]) -> dict[str, Any]:
    return {c.name: jsonable(row[c.name]) for c in _stored_columns(table)}


def _insert_rows(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
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


MovedRows = list[list[Any]]
Policy = Callable[[MergeContext, LeadReference], MovedRows]


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
    ctx.removed.setdefault(table.name, []).extend(_row_json(table, r) for r in removed)


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
            ctx.changed.setdefault(table.name, []).append(_row_json(table, row))
            conn.execute(
                update(table)
                .where(table.c.id == row["id"])
                .values(status="revoked", source=theirs.source, updated_at=func.now())
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
            .values(status="cancelled", cancelled_at=func.now(), updated_at=func.now())
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
    kept = [_row_json(table, row) for row in originals]
    ctx.removed.setdefault(table.name, []).extend(kept)
    copies = [{**row, "id": str(uuid7()), reference.column.name: str(ctx.survivor_id)} for row in kept]
    _insert_rows(ctx.conn, table, copies)
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
# Policies whose recorded rows are copies: an undo deletes them instead of moving them back.
COPYING_POLICIES = frozenset({copy_append_only})


def policy_for(reference: LeadReference) -> Policy | None:
    """The policy that moves this reference; None when nothing can (the guard test fails on it)."""
    special = SPECIAL_POLICIES.get(reference.table.name)
    if special is not None:
        return special
    return generic_move if generic_move_blocker(reference) is None else None


# -- merge ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MergeResult:
    merge_id: uuid.UUID
    survivor_id: uuid.UUID
    merged_id: uuid.UUID
    merged_at: datetime
    moved: dict[str, int]
    filled: list[str]


def _lock_pair(conn: Connection, organization_id: uuid.UUID, a: uuid.UUID, b: uuid.UUID) -> dict[uuid.UUID, dict]:
    """Both leads FOR UPDATE, in id order, in one statement; 404 unless both are leads of the organization."""
    rows = conn.execute(
        select(leads)
        .where(leads.c.organization_id == organization_id, leads.c.id.in_([a, b]))
        .order_by(leads.c.id)
        .with_for_update()
    ).mappings()
    found = {r["id"]: dict(r) for r in rows}
    if a not in found or b not in found:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    return found


_MERGE_MESSAGES = {
    MergeRefusal.SAME_LEAD: "A lead cannot be merged into itself.",
    MergeRefusal.MERGED_LEAD_CONVERTED: "A converted lead cannot be merged away; merge the other lead into it.",
    MergeRefusal.PSEUDONYMIZED: "A pseudonymized lead cannot be merged.",
}


def merge_leads(uow: UnitOfWork, actor: Actor, survivor_id: uuid.UUID, merged_id: uuid.UUID) -> MergeResult:
    """Merges `merged_id` into `survivor_id` (both of the actor's organization, else 404); the caller commits."""
    if survivor_id == merged_id:
        raise BadRequest(_MERGE_MESSAGES[MergeRefusal.SAME_LEAD], code=MergeRefusal.SAME_LEAD.value)
    conn = uow.connection
    org = actor.organization_id
    pair = _lock_pair(conn, org, survivor_id, merged_id)
    survivor, merged = pair[survivor_id], pair[merged_id]
    pseudonymized = conn.execute(
        select(func.count()).where(lead_pseudonyms.c.organization_id == org, lead_pseudonyms.c.lead_id.in_(list(pair)))
    ).scalar_one()
    refusal = merge_refusal(survivor, merged, either_pseudonymized=pseudonymized > 0)
    if refusal is not None:
        raise Conflict(_MERGE_MESSAGES[refusal], code=refusal.value)

    ctx = MergeContext(conn, org, survivor, merged, removed={}, changed={})
    references = lead_references()
    survivor_rows = {r.key: _primary_keys(ctx, r, survivor_id) for r in references}
    moved: dict[str, dict[str, Any]] = {}
    for reference in references:
        policy = policy_for(reference)
        if policy is None:  # the guard test keeps this from shipping; refuse rather than lose rows
            raise Conflict("This lead cannot be merged yet.", code="MERGE_POLICY_MISSING", table=reference.table.name)
        rows = policy(ctx, reference)
        if rows:
            moved[reference.key] = {"pk": [c.name for c in reference.primary_key], "rows": rows}
            if policy in COPYING_POLICIES:
                moved[reference.key]["copied"] = True

    # The merge's own timeline entry is the survivor's from the start: an undo does not report it as new.
    merged_entry_id = uuid7()
    survivor_rows.setdefault(f"{lead_activity_events.name}.lead_id", []).append([str(merged_entry_id)])
    filled = filled_values(survivor, merged)
    if filled:
        conn.execute(
            update(leads)
            .where(leads.c.id == survivor_id, leads.c.organization_id == org)
            .values(**filled, updated_at=func.now())
        )
    conn.execute(delete(leads).where(leads.c.id == merged_id, leads.c.organization_id == org))
    snapshot = {
        "mergedLead": _row_json(leads, merged),
        "filled": jsonable(filled),
        "survivorBefore": {column: jsonable(survivor[column]) for column in filled},
        "removed": ctx.removed,
        "changed": ctx.changed,
    }
    merge = conn.execute(
        insert(lead_merges)
        .values(
            id=uuid7(),
            organization_id=org,
            survivor_lead_id=survivor_id,
            original_survivor_id=survivor_id,
            merged_lead_id=merged_id,
            actor_user_id=actor.user_id,
            moved=moved,
            survivor_rows=survivor_rows,
            snapshot=snapshot,
        )
        .returning(lead_merges.c.id, lead_merges.c.merged_at)
    ).one()
    counts = {key: len(entry["rows"]) for key, entry in moved.items()}
    record_activities(
        conn,
        [
            {
                "id": merged_entry_id,
                "organization_id": org,
                "lead_id": survivor_id,
                "type": MERGED_ACTIVITY,
                "payload": {
                    "mergeId": str(merge.id),
                    "mergedLeadId": str(merged_id),
                    "moved": counts,
                    "filled": sorted(filled),
                },
                "actor_user_id": actor.user_id,
            }
        ],
    )
    uow.add_event(
        DomainEvent(
            type=LEAD_MERGED,
            organization_id=org,
            aggregate_id=survivor_id,
            payload={
                "leadId": str(survivor_id),
                "mergedLeadId": str(merged_id),
                "mergeId": str(merge.id),
                "actorUserId": str(actor.user_id) if actor.user_id else None,
            },
        )
    )
    scoring.rescore_leads(conn, org, [survivor_id])
    logger.info(
        "leads merged",
        extra={"organizationId": str(org), "survivorId": str(survivor_id), "mergedId": str(merged_id), "moved": counts},
    )
    return MergeResult(merge.id, survivor_id, merged_id, merge.merged_at, counts, sorted(filled))


def _primary_keys(ctx: MergeContext, reference: LeadReference, lead_id: uuid.UUID) -> list[list[Any]]:
    rows = ctx.conn.execute(select(*reference.primary_key).where(ctx.scoped(reference, lead_id))).all()
    return [[jsonable(v) for v in row] for row in rows]


# -- undo -------------------------------------------------------------------------------------------------


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


def _merge_row(conn: Connection, organization_id: uuid.UUID, merge_id: uuid.UUID, *, lock: bool) -> dict[str, Any]:
    query = select(lead_merges).where(lead_merges.c.organization_id == organization_id, lead_merges.c.id == merge_id)
    row = conn.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise NotFound("Merge not found.", code="MERGE_NOT_FOUND")
    return dict(row)


def undo_merge(uow: UnitOfWork, actor: Actor, merge_id: uuid.UUID) -> UndoResult:
    """Puts both leads back as they were before the merge; the caller commits."""
    conn = uow.connection
    org = actor.organization_id
    merge = _merge_row(conn, org, merge_id, lock=True)
    refusal = undo_refusal(
        merge["merged_at"],
        datetime.now(UTC),
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
    _insert_rows(conn, leads, [restored_lead])

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
                _insert_rows(conn, all_tables().tables[table_name], rows)
        except Exception:  # e.g. a tag deleted since: the rest of the undo stands
            logger.warning("merge undo could not restore removed rows", extra={"table": table_name})
            failed_restores.append(table_name)
    _restore_changed(conn, snapshot["changed"], merged_id)
    columns = columns_to_restore(snapshot["filled"], snapshot["survivorBefore"], jsonable(dict(survivor)))
    if columns.restore:
        conn.execute(
            update(leads)
            .where(leads.c.id == survivor_id, leads.c.organization_id == org)
            .values(**_typed_lead_values(columns.restore), updated_at=func.now())
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
        .values(undone_at=func.now(), undone_by_user_id=actor.user_id, undo_report=report, snapshot=None)
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
            .values(status=row["status"], source=row["source"], updated_at=func.now())
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
            .values(status=row["status"], cancelled_at=None, updated_at=func.now())
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


def purge_expired_snapshots(batch: int = 1000) -> dict[str, int]:
    """The `merge_snapshot_purge` job: once a merge can no longer be undone, its snapshot (the merged lead's
    details) has no use left and is dropped. The tombstone, the moved ids and the record of who merged stay.
    A batch per statement until none is left."""

    purged = 0
    while True:
        with get_engine().begin() as conn:
            expired = (
                select(lead_merges.c.id)
                .where(lead_merges.c.snapshot.is_not(None), lead_merges.c.merged_at < func.now() - UNDO_WINDOW)
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


# -- reading ----------------------------------------------------------------------------------------------


def survivor_of(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any] | None:
    """The tombstone of a merged lead: {survivorId, mergeId, mergedAt}, or None (the id was never merged
    away, or the merge was undone). One hop: a later merge of the survivor moved the tombstone along."""
    row = conn.execute(
        select(lead_merges.c.id, lead_merges.c.survivor_lead_id, lead_merges.c.merged_at).where(
            lead_merges.c.organization_id == organization_id,
            lead_merges.c.merged_lead_id == lead_id,
            lead_merges.c.undone_at.is_(None),
        )
    ).first()
    if row is None:
        return None
    return {"survivor_id": row.survivor_lead_id, "merge_id": row.id, "merged_at": row.merged_at}


def merged_lead_ids(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> list[uuid.UUID]:
    """The ids of the duplicates merged into this lead (live tombstones): what still names them outside the
    lead (a stored Idempotency-Key answer of their create) belongs to the survivor's person too."""
    return list(
        conn.execute(
            select(lead_merges.c.merged_lead_id).where(
                lead_merges.c.organization_id == organization_id,
                lead_merges.c.survivor_lead_id == lead_id,
                lead_merges.c.undone_at.is_(None),
            )
        ).scalars()
    )


def get_merge(conn: Connection, organization_id: uuid.UUID, merge_id: uuid.UUID) -> dict[str, Any]:
    return _public_merge(_merge_row(conn, organization_id, merge_id, lock=False))


def merges_of(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> list[dict[str, Any]]:
    """The merges a lead survived, newest first. Another organization's lead, or a random id, is 404 like
    every lead sub-resource (a lead merged away since is still found by the merges it survived)."""
    known = conn.execute(
        select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    ).first() or conn.execute(
        select(lead_merges.c.id).where(
            lead_merges.c.organization_id == organization_id, lead_merges.c.survivor_lead_id == lead_id
        )
    ).first()
    if known is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    rows = conn.execute(
        select(lead_merges)
        .where(lead_merges.c.organization_id == organization_id, lead_merges.c.survivor_lead_id == lead_id)
        .order_by(lead_merges.c.merged_at.desc(), lead_merges.c.id.desc())
        .limit(100)
    ).mappings()
    return [_public_merge(dict(r)) for r in rows]


def _public_merge(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "survivor_lead_id": row["survivor_lead_id"],
        "original_survivor_id": row["original_survivor_id"],
        "merged_lead_id": row["merged_lead_id"],
        "actor_user_id": row["actor_user_id"],
        "merged_at": row["merged_at"],
        "moved": {key: entry["rows"] for key, entry in row["moved"].items()},
        "undone_at": row["undone_at"],
        "undone_by_user_id": row["undone_by_user_id"],
        "undo_report": row["undo_report"],
    }


_PERSON_COLUMNS = (
    leads.c.id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.status,
    leads.c.converted_membership_id,
    leads.c.created_at,
)


def merge_suggestions(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The leads of the organization that are the same person as this one by the identity rules
    (leads.rules.identity.is_same_lead_person: equal canonical email, or equal phone with agreeing names and no
    one else on that number), oldest first, and the suggested survivor: the oldest of them all (the lead
    every later duplicate was a copy of). A converted lead is never suggested to be merged away."""
    lead = conn.execute(
        select(*_PERSON_COLUMNS).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    ).first()
    if lead is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    region = organization_region(conn, organization_id)
    key = person_key(lead.email, lead.phone, lead.name, default_region=region)
    last7 = last_seven_digits(key.phone_e164)
    prefilter = []
    if key.email is not None:
        prefilter.append(func.lower(leads.c.email) == key.email)
    if last7 is not None:
        prefilter.append(func.right(leads.c.phone_digits, 7) == last7)
    if not prefilter:
        return {"survivor_id": lead_id, "duplicates": []}
    rows = conn.execute(
        select(*_PERSON_COLUMNS)
        .where(leads.c.organization_id == organization_id, leads.c.id != lead_id, or_(*prefilter))
        .order_by(leads.c.created_at, leads.c.id)
        .limit(SUGGESTION_LIMIT)
    ).all()
    keys = {r.id: person_key(r.email, r.phone, r.name, default_region=region) for r in rows}
    on_phone = [k for k in keys.values() if key.phone_e164 is not None and k.phone_e164 == key.phone_e164]
    duplicates = []
    for row in rows:
        candidate = keys[row.id]
        others = [other for other in on_phone if other is not candidate]
        if not is_same_lead_person(candidate, key, others):
            continue
        duplicates.append(
            {
                "lead_id": row.id,
                "name": row.name,
                "status": row.status,
                "matched_by": "email" if key.email is not None and candidate.email == key.email else "phone",
                "created_at": row.created_at,
                "converted": is_won(row.status, row.converted_membership_id),
            }
        )
    everyone = [(lead.created_at, lead.id, is_won(lead.status, lead.converted_membership_id))] + [
        (d["created_at"], d["lead_id"], d["converted"]) for d in duplicates
    ]
    # A converted lead survives whenever there is one (it cannot be merged away); else the oldest.
    survivor = min(everyone, key=lambda e: (not e[2], e[0], e[1]))[1]
    return {"survivor_id": survivor, "duplicates": duplicates}


def has_unresolved_duplicates(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> bool:
    return bool(merge_suggestions(conn, organization_id, lead_id)["duplicates"])
