"""Returning leads: a closed lead that comes back is reopened, not duplicated (spec "Returning leads").

`return_lead` is the one writer every entry point shares: public capture and staff create (through the dedup
seam in `leads.intake.intake_lead`), Meta and WhatsApp ingestion when they exist (the same seam, with
`via=ReturnVia.META` / `WHATSAPP`), the platform's released joins (`release_join`) and the staff Reopen
action. It runs in the caller's unit of work, i.e. in one transaction:

1. The lead row is locked first (`leads.moves.lock_lead`, the lock every lead write takes; the entry points
   hold only their per-person advisory locks before it) and the lead is classified again under the lock.
   Of two touches at once the second waits, then reads the committed row, finds it open and writes nothing:
   a lead is reopened once. Won leads are never reopened.
2. A lost or frozen lead moves to the first active `new` stage of its own pipeline, or of the default
   pipeline when its own is archived, with the machinery of every primary move (`leads.moves`): a
   status event with the actor, a `stage_moved` entry, `lead.status_changed`. An archived lead that was
   still open keeps its stage and status.
3. One UPDATE writes the move and the rest: unarchived, unpaused, no unanswered calls in a row, a call due now
   (next_action_at = returned_at; the previous life's follow-up is dropped), returned_at / _from_status /
   _via, return_count + 1, the owner of an unowned lead, empty contact fields and a missing campaign filled
   from the touch, and the entry point's note appended in SQL (`note = CASE … END`, so simultaneous returns
   cannot overwrite each other), skipping a repeat of the sentence it already ends with.
4. A `lead_returned` timeline entry (fromStatus, via, and the person's words in `note`), and after commit
   `lead.status_changed` (closed status -> new, marked `returned`, `via` and, for a released join,
   `recoveredSignup: true`) plus `lead.returned`, the seam the follow-up task sync (the tasks issue)
   subscribes to: the task side is not touched here.

A lead that is open (or won) is not touched at all: no owner lookup, no write.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, case, delete, func, insert, literal, select, update

from leadcrm.directory.default_assignee import default_assignee as organization_default_assignee
from leadcrm.directory.rules import Actor, system_actor
from leadcrm.leads.activity import record_activities
from leadcrm.leads.assignment import Placed, lead_traits, organization_rules, place, rule_activity_row

# The move machinery every primary move shares (PATCH, set-primary, bulk moves): the same row values,
# status event, stage_moved payload and lead.status_changed, so a reopen's history reads like any move.
from leadcrm.leads.moves import (
    OWNER_CHANGED,
    STAGE_MOVED,
    activity_row,
    lock_lead,
    primary_move_values,
    stage_moved_payload,
    status_changed_event,
    status_event_row,
)
from leadcrm.leads.rules.moves import LeadPosition, StageMove, plan_primary_swap, plan_stage_move
from leadcrm.leads.rules.returning import (
    LEAD_RETURNED_ACTIVITY,
    LEAD_RETURNED_EVENT,
    NOTE_SEPARATOR,
    RETURN_CALL,
    SENTENCE_START_BEFORE,
    SENTENCE_TRAILER,
    LeadFacts,
    ReturnKind,
    ReturnTouch,
    ReturnVia,
    classify_return,
    filled_fields,
    owner_after_return,
    sentence_core,
)
from leadcrm.leads.tables import LEAD_COLUMNS, lead_pipeline_placements, lead_status_events, leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.stages import StageRow, default_new_stage, first_active_stage, resolve_stage
from leadcrm.pipelines.tables import pipelines
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.events import DomainEvent

logger = logging.getLogger(__name__)

# What the returning-leads surfaces show besides the lead's usual columns.
# Beyond what every lead answer carries (LEAD_COLUMNS has returned_at, returned_via, return_count, …).
RETURN_COLUMNS = (
    leads.c.paused_at,
    leads.c.consecutive_no_answer_count,
)
RETURNED_LEAD_COLUMNS = (*LEAD_COLUMNS, *RETURN_COLUMNS)


@dataclass(frozen=True)
class ReturnOutcome:
    """What a return did. `lead` is the lead after it (RETURNED_LEAD_COLUMNS), unchanged unless reopened."""

    kind: ReturnKind
    lead: dict[str, Any]

    @property
    def reopened(self) -> bool:
        return self.kind.reopens


def return_lead(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    *,
    via: ReturnVia,
    actor_user_id: uuid.UUID | None,
    touch: ReturnTouch | None = None,
    owner_user_id: uuid.UUID | None = None,
    recovered_signup: bool = False,
) -> ReturnOutcome:
    """Reopens a closed lead of the organization that came back through `via`; see the module docstring.

    `actor_user_id` is the staff member acting (None for the public and platform paths): the status event
    and timeline entries record them. `owner_user_id` is who an unowned lead goes to on a staff path (the
    assignee the staff member chose; default: the actor); without either, the organization's default
    assignee. Gates (staff, assignable owner, campaign of the organization) are the caller's. 404
    LEAD_NOT_FOUND for a lead that is not the organization's.
    """
    conn = uow.connection
    touch = touch or ReturnTouch()
    row = lock_lead(conn, organization_id, lead_id)
    kind = classify_return(
        row["status"], archived=row["archived_at"] is not None, converted_membership_id=row["converted_membership_id"]
    )
    if not kind.reopens:
        return ReturnOutcome(kind, _read_returned_lead(conn, organization_id, lead_id))

    actor = _history_actor(organization_id, actor_user_id)
    move = _planned_move(conn, organization_id, row) if kind is ReturnKind.TO_NEW_STAGE else None
    placed = _rule_owner(conn, organization_id, row, touch, move, owner_user_id or actor_user_id)
    owner = placed.user_id if placed else _owner(conn, organization_id, row, owner_user_id or actor_user_id)
    values = _reopen_values(row, via, touch, owner, move)
    if move is not None and move.changes_pipeline:
        _merge_placement(conn, organization_id, lead_id, move.pipeline_id)
    reopened = dict(
        conn.execute(
            update(leads)
            .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
            .values(**values)
            .returning(*RETURNED_LEAD_COLUMNS)
        )
        .mappings()
        .one()
    )
    _record_reopen(uow, actor, row, reopened, via, touch, move, recovered_signup, placed)
    return ReturnOutcome(kind, reopened)


def reopen_lead(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, *, note: str | None = None) -> ReturnOutcome:
    """The staff Reopen action: a closed lead is reopened with the caller as the Sales actor (they take it
    when it has no owner). An open lead is left as it is (ALREADY_OPEN: a second click, or a colleague who
    was quicker, is not an error). 400 LEAD_WON_NOT_REOPENABLE for a won lead; 404 LEAD_NOT_FOUND."""
    outcome = return_lead(
        uow,
        actor.organization_id,
        lead_id,
        via=ReturnVia.STAFF_REOPEN,
        actor_user_id=actor.user_id,
        touch=ReturnTouch(note=note),
    )
    if outcome.kind is ReturnKind.WON:
        raise BadRequest(
            "A converted lead or a customer is a member or a buyer and is never reopened.",
            code="LEAD_WON_NOT_REOPENABLE",
        )
    return outcome


# -- pieces ------------------------------------------------------------------------------------------------


def _history_actor(organization_id: uuid.UUID, actor_user_id: uuid.UUID | None) -> Actor:
    """Who the history records: the acting staff member, or nobody (the system) on public/platform paths.
    Only recorded, never checked: the caller applied the gates."""
    actor = system_actor(organization_id)
    return actor if actor_user_id is None else dataclasses.replace(actor, user_id=actor_user_id)


def _facts(row: Mapping[str, Any]) -> LeadFacts:
    return LeadFacts(
        name=row["name"],
        email=row["email"],
        phone=row["phone"],
        campaign_id=row["campaign_id"],
        assigned_to_user_id=row["assigned_to_user_id"],
    )


@dataclass(frozen=True)
class _ReturnMove:
    """A lost or frozen lead's move onto the `new` stage it returns to (in its own or the default pipeline)."""

    stage_move: StageMove
    from_pipeline_id: uuid.UUID
    pipeline_id: uuid.UUID

    @property
    def changes_pipeline(self) -> bool:
        return self.pipeline_id != self.from_pipeline_id


def _planned_move(conn: Connection, organization_id: uuid.UUID, row: Mapping[str, Any]) -> _ReturnMove | None:
    target = reopen_stage(conn, organization_id, row["pipeline_id"])
    position = LeadPosition(
        lead_id=row["id"],
        pipeline_id=row["pipeline_id"],
        stage_id=row["stage_id"],
        status=StageCategory(row["status"]),
        converted=False,  # classify_return lets no converted lead through
        lost_reason=row["lost_reason"],
    )
    if target.pipeline_id == row["pipeline_id"]:
        stage_move = plan_stage_move(position, target)  # None only if it already sat there: nothing to move
    else:
        # Into the default pipeline: the primary placement changes pipeline, as a primary swap does.
        stage_move = plan_primary_swap(position, target)
    if stage_move is None:
        return None
    return _ReturnMove(stage_move, from_pipeline_id=row["pipeline_id"], pipeline_id=target.pipeline_id)


def _rule_owner(
    conn: Connection,
    organization_id: uuid.UUID,
    row: Mapping[str, Any],
    touch: ReturnTouch,
    move: _ReturnMove | None,
    sales_owner: uuid.UUID | None,
) -> Placed | None:
    """An unowned lead reopened on a path with no Sales actor goes where the organization's assignment rules
    place it (leads.assignment), before the default assignee; one statement when it has no rules."""
    if row["assigned_to_user_id"] is not None or sales_owner is not None:
        return None
    timezone, any_rules = organization_rules(conn, organization_id)
    if not any_rules:
        return None
    traits = lead_traits(
        source=row["source"],
        campaign_id=row["campaign_id"] or touch.campaign_id,
        pipeline_id=move.pipeline_id if move is not None else row["pipeline_id"],
        form_ref=None,
        locale=row["locale"],
        timezone=timezone,
    )
    return place(conn, organization_id, traits, timezone)


def _owner(
    conn: Connection, organization_id: uuid.UUID, row: Mapping[str, Any], sales_owner: uuid.UUID | None
) -> uuid.UUID | None:
    current = row["assigned_to_user_id"]
    # The default assignee is looked up only for an unowned lead on a path with no Sales actor.
    needs_default = current is None and sales_owner is None
    return owner_after_return(current, sales_owner, default_assignee(conn, organization_id) if needs_default else None)


def _reopen_values(
    row: Mapping[str, Any], via: ReturnVia, touch: ReturnTouch, owner: uuid.UUID | None, move: _ReturnMove | None
) -> dict[str, Any]:
    """Everything a reopen writes on the lead row, for ONE UPDATE."""
    values: dict[str, Any] = {
        "archived_at": None,
        "paused_at": None,
        "consecutive_no_answer_count": 0,
        # A call due now (one statement reads the clock once: next_action_at = returned_at). The previous
        # life's follow-up is not a promise any more.
        "next_action_at": sql_now(),
        "next_action_type": RETURN_CALL,
        "next_action_note": None,
        "returned_at": sql_now(),
        "returned_from_status": row["status"],
        "returned_via": via.value,
        "return_count": leads.c.return_count + 1,
        "updated_at": sql_now(),
        **filled_fields(_facts(row), touch),
    }
    if sentence_core(touch.note):
        values["note"] = note_sql(touch.note or "")
    if owner != row["assigned_to_user_id"]:
        values["assigned_to_user_id"] = owner
    if move is not None:
        values.update(primary_move_values(move.stage_move))
        if move.changes_pipeline:
            values["pipeline_id"] = move.pipeline_id
    return values


def _record_reopen(
    uow: UnitOfWork,
    actor: Actor,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    via: ReturnVia,
    touch: ReturnTouch,
    move: _ReturnMove | None,
    recovered_signup: bool,
    placed: Placed | None = None,
) -> None:
    """The history of a reopen: the move's status event and events, the timeline entries (the assignment
    rule that placed it, if one did), lead.returned."""
    conn = uow.connection
    lead_id = after["id"]
    marker: dict[str, Any] = {"returned": True, "via": via.value}
    if recovered_signup:
        marker["recoveredSignup"] = True
    activities: list[dict[str, Any]] = []
    if move is not None:
        conn.execute(insert(lead_status_events).values(**status_event_row(actor, move.stage_move)))
        if move.stage_move.category_changed:
            status_changed = status_changed_event(actor, move.stage_move)
            uow.add_event(dataclasses.replace(status_changed, payload={**status_changed.payload, **marker}))
        moved = {**stage_moved_payload(move.pipeline_id, move.stage_move), **marker}
        if move.changes_pipeline:
            moved["fromPipelineId"] = str(move.from_pipeline_id)
        activities.append(activity_row(actor, lead_id, STAGE_MOVED, moved))
    if after["assigned_to_user_id"] != before["assigned_to_user_id"]:
        owner_change = {"fromUserId": None, "toUserId": str(after["assigned_to_user_id"])}
        activities.append(activity_row(actor, lead_id, OWNER_CHANGED, owner_change))
    if placed is not None:
        activities.append(rule_activity_row(actor.organization_id, lead_id, placed))
    returned = {
        "fromStatus": before["status"],
        "via": via.value,
        "note": touch.note,  # what the person said (form message, ad answers, WhatsApp text)
        "wasArchived": before["archived_at"] is not None,
        "returnCount": after["return_count"],
    }
    if recovered_signup:
        returned["recoveredSignup"] = True
    activities.append(activity_row(actor, lead_id, LEAD_RETURNED_ACTIVITY, returned))
    record_activities(conn, activities)
    uow.add_event(_returned_event(actor, before, after, via, recovered_signup))


def reopen_stage(conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> StageRow:
    """The first active `new` stage of the lead's pipeline; of the default pipeline when the lead's pipeline
    is archived (or, against the pipeline rules, has no active new stage left)."""
    archived_at = conn.execute(
        select(pipelines.c.archived_at)
        .where(pipelines.c.organization_id == organization_id, pipelines.c.id == pipeline_id)
        .with_for_update(read=True, key_share=True)
    ).scalar_one()
    if archived_at is None:
        own = first_active_stage(conn, organization_id, pipeline_id, StageCategory.NEW)
        if own is not None:
            return own
    return resolve_stage(conn, organization_id, default_new_stage(conn, organization_id).stage_id)


def _merge_placement(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, pipeline_id: uuid.UUID) -> None:
    """A lead moving its primary placement into a pipeline it was a secondary member of is in it once."""
    conn.execute(
        delete(lead_pipeline_placements).where(
            lead_pipeline_placements.c.organization_id == organization_id,
            lead_pipeline_placements.c.lead_id == lead_id,
            lead_pipeline_placements.c.pipeline_id == pipeline_id,
        )
    )


def default_assignee(conn: Connection, organization_id: uuid.UUID) -> uuid.UUID | None:
    """Who takes an unowned lead that came back on a public or platform path: the organization's default
    assignee setting when it names an active staff member, else its oldest active owner (the same person the
    new-lead auto-task goes to); see `directory.default_assignee`."""
    return organization_default_assignee(conn, organization_id)


def note_sql(addition: str) -> ColumnElement[Any]:
    """`leads.note` with `addition` appended, computed by PostgreSQL from the row's current note (the same
    rule as `leads.rules.returning.append_note`): unchanged when the note already ends with that sentence, the
    addition alone when the note is blank, else note + separator + addition."""
    wanted = sentence_core(addition)
    added = addition.strip()
    note = func.coalesce(leads.c.note, "")
    core = func.rtrim(note, literal(SENTENCE_TRAILER))
    before = func.left(core, func.length(core) - len(wanted))
    already_there = and_(func.right(core, len(wanted)) == wanted, before.op("~")(literal(SENTENCE_START_BEFORE)))
    return case(
        (already_there, leads.c.note),
        (note.op("~")(literal(r"^\s*$")), literal(added)),
        else_=leads.c.note + literal(NOTE_SEPARATOR) + literal(added),
    )


def _returned_event(
    actor: Actor, before: Mapping[str, Any], after: Mapping[str, Any], via: ReturnVia, recovered_signup: bool
) -> DomainEvent:
    """`lead.returned`: ids and facts only (no PII), for the follow-up task sync and the Sales queue."""
    payload: dict[str, Any] = {
        "leadId": str(after["id"]),
        "via": via.value,
        "fromStatus": before["status"],
        "toStatus": after["status"],
        "wasArchived": before["archived_at"] is not None,
        "returnCount": after["return_count"],
        "returnedAt": after["returned_at"].isoformat(),
        "nextActionType": after["next_action_type"],
        "ownerUserId": str(after["assigned_to_user_id"]) if after["assigned_to_user_id"] else None,
        "actorUserId": str(actor.user_id) if actor.user_id else None,
    }
    if recovered_signup:
        payload["recoveredSignup"] = True
    return DomainEvent(
        type=LEAD_RETURNED_EVENT, organization_id=actor.organization_id, aggregate_id=after["id"], payload=payload
    )


def _read_returned_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    return dict(
        conn.execute(
            select(*RETURNED_LEAD_COLUMNS).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
        )
        .mappings()
        .one()
    )















