"""Merging a duplicate lead into a survivor, undoing a merge, and the tombstone a merged lead leaves.

Which rows move: every row of every table with a foreign key to leads.id, found in the SQLAlchemy metadata
(`lead_references`), so the tables other areas add (messages, attributions, deals, tickets, …) move too
without this module naming them. Each reference is moved by the generic move (UPDATE … SET <column> =
survivor, RETURNING the primary key, scoped by organization) unless `SPECIAL_POLICIES` names its table.
The generic move applies only where it cannot break a constraint: the table has a primary key and an
organization_id, and no unique index or constraint includes the lead column (`generic_move_blocker`).
tests/integration/qualification/test_merge_policies.py fails for any reference that is neither movable generically nor
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
- qualification (qualification.rules.merges.qualification_fill): the survivor's own decision stands; a
  survivor without one (never scored, or scored) takes the duplicate's whole decision, so a nurture
  continues on the survivor with its re-evaluation date (the nurture_reevaluation job then finds the
  survivor, the duplicate's row being gone); when both are nurtured the earlier date wins. BANT answers
  reach the survivor criterion by criterion, each with its evidence, where the survivor has no answer.
  An undo puts the survivor's decision and answers back as they were (unless edited since).

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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    delete,
    func,
    insert,
    select,
    update,
)

from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activities
from leadcrm.leads.tables import (
    lead_activity_events,
    lead_pseudonyms,
    leads,
)
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.qualification import scoring
from leadcrm.qualification.merge_policies import (
    COPYING_POLICIES,
    LeadReference,
    MergeContext,
    jsonable,
    lead_references,
    policy_for,
    row_json,
)
from leadcrm.qualification.rules.merges import (
    MergeRefusal,
    filled_values,
    merge_refusal,
)
from leadcrm.qualification.tables import lead_merges

logger = logging.getLogger(__name__)

LEAD_MERGED = "lead.merged"
MERGED_ACTIVITY = "lead_merged"


# -- the references to leads -----------------------------------------------------------------------------


# -- the merge context and snapshot helpers ---------------------------------------------------------------


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
            .values(**filled, updated_at=sql_now())
        )
    conn.execute(delete(leads).where(leads.c.id == merged_id, leads.c.organization_id == org))
    snapshot = {
        "mergedLead": row_json(leads, merged),
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




# -- reading ----------------------------------------------------------------------------------------------


