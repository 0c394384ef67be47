"""Moving leads: stage and status as one move, secondary pipelines, set-primary, bulk moves, owner and
contact edits, archive.

Every write takes the lead row first (`SELECT … FOR UPDATE`; bulk operations take all their rows in id
order, so two bulk requests over overlapping leads queue instead of deadlocking), then asks the pure rules
in `leadcrm.domain.lead_moves`, then writes. Every primary move goes through the same pieces:

- `_primary_move_values`: stage_id and status change together (status = the stage's category), and
  status_changed_at is bumped only when the category changes (updated_at always);
- `_record_primary_move`: a lead_status_events row for every stage change (same-category moves too) and
  `lead.status_changed` (ids only) only on a category change;
- a `stage_moved` timeline entry (`primary_changed` for set-primary), written best-effort.

The bulk move applies the same rules (`plan_bulk_move`) and writes the same rows set-based. A move to the
stage the lead is already on writes and records nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Boolean,
    Connection,
    Text,
    Uuid,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.db.recordsets import recordset
from leadcrm.db.tables import (
    lead_pipeline_placements,
    lead_status_events,
    leads,
    pipelines,
)
from leadcrm.db.uow import UnitOfWork
from leadcrm.domain.access import Actor
from leadcrm.domain.events import LEAD_STATUS_CHANGED, DomainEvent
from leadcrm.domain.lead_moves import (
    BulkCandidate,
    LeadPosition,
    MoveRefusal,
    MoveRefused,
    StageMove,
    distinct_in_order,
    is_converted,
    lost_reason_correction,
    plan_bulk_move,
    plan_primary_swap,
    plan_stage_move,
    requested_status_needs_move,
    target_refusal,
)
from leadcrm.domain.statuses import StageCategory
from leadcrm.errors import BadRequest, Conflict, NotFound
from leadcrm.ids import uuid7
from leadcrm.services.activity import record_activities
from leadcrm.services.leads import LEAD_COLUMNS
from leadcrm.services.ownership import require_assignable_staff
from leadcrm.services.pipelines import StageRow, first_active_stage, resolve_stage

logger = logging.getLogger(__name__)

# Timeline entry types (lead_activity_events.type) this module writes.
STAGE_MOVED = "stage_moved"
PIPELINE_ADDED = "pipeline_added"
PIPELINE_REMOVED = "pipeline_removed"
PRIMARY_CHANGED = "primary_changed"
OWNER_CHANGED = "owner_changed"
LOST_REASON_CHANGED = "lost_reason_changed"
DETAILS_UPDATED = "details_updated"
TEST_FLAG_CHANGED = "test_flag_changed"
ARCHIVED = "archived"
UNARCHIVED = "unarchived"

# Bulk requests: the most ids one request may name (the API refuses more before anything runs).
MAX_BULK_LEADS = 10_000

# Plain lead columns a PATCH may correct, by their camelCase names on the timeline.
EDITABLE_DETAILS: dict[str, str] = {
    "name": "name",
    "email": "email",
    "phone": "phone",
    "note": "note",
    "locale": "locale",
    "trial_date": "trialDate",
}
CONTACT_FIELDS = ("name", "email", "phone")

_REFUSALS: dict[MoveRefusal, tuple[str, str]] = {
    MoveRefusal.CONVERT_REQUIRED: (
        "CONVERT_REQUIRED",
        "Only converting the lead puts it into a converted stage.",
    ),
    MoveRefusal.NOT_IN_PIPELINE: ("STAGE_NOT_IN_PIPELINE", "The stage is not in this pipeline of the lead."),
    MoveRefusal.STAGE_ARCHIVED: ("STAGE_ARCHIVED", "The stage is archived."),
    MoveRefusal.LOST_REASON_REQUIRED: ("LOST_REASON_REQUIRED", "A lead marked lost needs a lost reason."),
    MoveRefusal.LOST_REASON_NOT_LOST: ("LOST_REASON_NOT_LOST", "A lost reason is only kept for a lost lead."),
}


def refusal_error(refusal: MoveRefusal) -> BadRequest:
    code, message = _REFUSALS[refusal]
    return BadRequest(message, code=code)


def _lead_not_found() -> NotFound:
    return NotFound("Lead not found.", code="LEAD_NOT_FOUND")


def _placement_not_found() -> NotFound:
    return NotFound("The lead is not in this pipeline.", code="PLACEMENT_NOT_FOUND")


# -- reading and locking ---------------------------------------------------------------------------------

_LOCK_COLUMNS = (*LEAD_COLUMNS, leads.c.converted_membership_id)


def lock_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The lead row, locked until the transaction ends; another organization's lead is not found."""
    row = (
        conn.execute(
            select(*_LOCK_COLUMNS)
            .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
            .with_for_update()
        )
        .mappings()
        .first()
    )
    if row is None:
        raise _lead_not_found()
    return dict(row)


def _position(row: Mapping[str, Any]) -> LeadPosition:
    return LeadPosition(
        lead_id=row["id"],
        pipeline_id=row["pipeline_id"],
        stage_id=row["stage_id"],
        status=StageCategory(row["status"]),
        converted=is_converted(row["status"], row["converted_membership_id"]),
        lost_reason=row["lost_reason"],
    )


def _public(row: Mapping[str, Any]) -> dict[str, Any]:
    """The lead as the API shows it (LEAD_COLUMNS)."""
    return {c.name: row[c.name] for c in LEAD_COLUMNS}


def _update_lead(conn: Connection, row: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    updated = (
        conn.execute(
            update(leads)
            .where(leads.c.id == row["id"], leads.c.organization_id == row["organization_id"])
            .values(**values, updated_at=func.now())
            .returning(*LEAD_COLUMNS)
        )
        .mappings()
        .one()
    )
    return dict(updated)


# -- the move machinery ----------------------------------------------------------------------------------


def _primary_move_values(move: StageMove) -> dict[str, Any]:
    """Stage and status together; statusChangedAt only when the category changes."""
    values: dict[str, Any] = {
        "stage_id": move.to_stage_id,
        "status": move.to_status.value,
        "lost_reason": move.lost_reason,
    }
    if move.category_changed:
        values["status_changed_at"] = func.now()
    return values


def _status_event_row(actor: Actor, move: StageMove) -> dict[str, Any]:
    return {
        "id": uuid7(),
        "organization_id": actor.organization_id,
        "lead_id": move.lead_id,
        "from_status": move.from_status.value,
        "to_status": move.to_status.value,
        "from_stage_id": move.from_stage_id,
        "to_stage_id": move.to_stage_id,
        "actor_user_id": actor.user_id,
        "reason": move.status_reason,
    }


def _stage_moved_payload(pipeline_id: uuid.UUID, move: StageMove) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "pipelineId": str(pipeline_id),
        "primary": True,
        "fromStageId": str(move.from_stage_id),
        "toStageId": str(move.to_stage_id),
        "fromStatus": move.from_status.value,
        "toStatus": move.to_status.value,
    }
    if move.status_reason:
        payload["lostReason"] = move.status_reason
    return payload


def _status_changed_event(actor: Actor, move: StageMove) -> DomainEvent:
    return DomainEvent(
        type=LEAD_STATUS_CHANGED,
        organization_id=actor.organization_id,
        aggregate_id=move.lead_id,
        payload={
            "leadId": str(move.lead_id),
            "fromStatus": move.from_status.value,
            "toStatus": move.to_status.value,
            "fromStageId": str(move.from_stage_id),
            "toStageId": str(move.to_stage_id),
            "actorUserId": str(actor.user_id) if actor.user_id else None,  # None: the system (system_actor)
        },
    )


def _activity(actor: Actor, lead_id: uuid.UUID, activity_type: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "organization_id": actor.organization_id,
        "lead_id": lead_id,
        "type": activity_type,
        "payload": payload,
        "actor_user_id": actor.user_id,
    }


def _record_primary_move(uow: UnitOfWork, actor: Actor, move: StageMove) -> None:
    """The history of one primary stage change: the status event and, on a category change, the event."""
    uow.connection.execute(insert(lead_status_events).values(**_status_event_row(actor, move)))
    if move.category_changed:
        uow.add_event(_status_changed_event(actor, move))


def move_lead_to_stage(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    stage_id: uuid.UUID,
    *,
    lost_reason: str | None = None,
) -> dict[str, Any]:
    """Moves the lead's primary placement onto `stage_id` (a stage of its primary pipeline); the lead after.

    400 STAGE_NOT_IN_PIPELINE / STAGE_ARCHIVED / CONVERT_REQUIRED / LOST_REASON_REQUIRED; 404 for a lead
    or stage that is not in the organization. Moving to the stage the lead is on changes nothing.
    """
    return update_lead(uow, actor, lead_id, LeadUpdate(stage_id=stage_id, lost_reason=lost_reason))


# -- PATCH lead --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadUpdate:
    """What a PATCH asks for. `details` holds only the plain columns the caller sent (None clears one)."""

    stage_id: uuid.UUID | None = None
    status: StageCategory | None = None
    lost_reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    is_test: bool | None = None
    assign: bool = False  # whether assigned_to_user_id was sent at all (None then unassigns)
    assigned_to_user_id: uuid.UUID | None = None


def update_lead(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    change: LeadUpdate,
    *,
    locked: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One PATCH: a stage/status move, owner, test flag and contact corrections, in one UPDATE.

    stageId wins over status; a bare status resolves to the first active stage of that category in the
    lead's primary pipeline (and is no move when the lead already has it). What did not change is not
    written and not recorded.
    """
    conn = uow.connection
    row = locked or lock_lead(conn, actor.organization_id, lead_id)
    lead = _position(row)
    values: dict[str, Any] = {}
    activities: list[dict[str, Any]] = []

    move = _requested_move(conn, actor, lead, change)
    if move is not None:
        values.update(_primary_move_values(move))
        activities.append(_activity(actor, lead_id, STAGE_MOVED, _stage_moved_payload(lead.pipeline_id, move)))
    elif change.lost_reason is not None:
        try:
            corrected = lost_reason_correction(lead, change.lost_reason)
        except MoveRefused as refused:
            raise refusal_error(refused.refusal) from None
        if corrected is not None:
            values["lost_reason"] = corrected
            activities.append(
                _activity(actor, lead_id, LOST_REASON_CHANGED, {"from": row["lost_reason"], "to": corrected})
            )

    if change.assign and change.assigned_to_user_id != row["assigned_to_user_id"]:
        if change.assigned_to_user_id is not None:
            require_assignable_staff(conn, actor.organization_id, change.assigned_to_user_id)
        values["assigned_to_user_id"] = change.assigned_to_user_id
        activities.append(_activity(actor, lead_id, OWNER_CHANGED, _owner_payload(row, change.assigned_to_user_id)))

    if change.is_test is not None and change.is_test != row["is_test"]:
        values["is_test"] = change.is_test
        activities.append(_activity(actor, lead_id, TEST_FLAG_CHANGED, {"isTest": change.is_test}))

    edited = {name: value for name, value in change.details.items() if row[name] != value}
    if edited:
        if not any(edited.get(name, row[name]) for name in CONTACT_FIELDS):
            raise BadRequest("A lead needs at least a name, an email or a phone.", code="LEAD_NEEDS_CONTACT")
        values.update(edited)
        # Field names only: the values are corrections the lead row now holds (the original receipt is kept).
        activities.append(
            _activity(actor, lead_id, DETAILS_UPDATED, {"fields": [EDITABLE_DETAILS[name] for name in edited]})
        )

    if not values:
        return _public(row)
    updated = _update_lead(conn, row, values)
    if move is not None:
        _record_primary_move(uow, actor, move)
    record_activities(conn, activities)
    return updated


def _requested_move(conn: Connection, actor: Actor, lead: LeadPosition, change: LeadUpdate) -> StageMove | None:
    target: StageRow | None = None
    if change.stage_id is not None:
        target = resolve_stage(conn, actor.organization_id, change.stage_id)
    elif change.status is not None and requested_status_needs_move(lead.status, change.status):
        target = first_active_stage(conn, actor.organization_id, lead.pipeline_id, change.status)
        if target is None:
            raise BadRequest(
                "The lead's pipeline has no active stage for this status.",
                code="NO_STAGE_FOR_STATUS",
                status=StageCategory(change.status).value,
            )
    if target is None:
        return None
    try:
        return plan_stage_move(lead, target, lost_reason=change.lost_reason)
    except MoveRefused as refused:
        raise refusal_error(refused.refusal) from None


def _owner_payload(row: Mapping[str, Any], to_user_id: uuid.UUID | None) -> dict[str, Any]:
    previous = row["assigned_to_user_id"]
    return {
        "fromUserId": str(previous) if previous else None,
        "toUserId": str(to_user_id) if to_user_id else None,
    }


# -- secondary pipelines -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    lead_id: uuid.UUID
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    is_primary: bool


def _require_pipeline(conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> None:
    """The pipeline exists here and is not archived; KEY SHARE like every lead write's foreign-key check."""
    row = conn.execute(
        select(pipelines.c.archived_at)
        .where(pipelines.c.organization_id == organization_id, pipelines.c.id == pipeline_id)
        .with_for_update(read=True, key_share=True)
    ).first()
    if row is None:
        raise NotFound("Pipeline not found.", code="PIPELINE_NOT_FOUND")
    if row.archived_at is not None:
        raise Conflict("This pipeline is archived.", code="PIPELINE_ARCHIVED")


def _lock_placement(
    conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, pipeline_id: uuid.UUID
) -> uuid.UUID | None:
    """The stage of the lead's secondary placement in the pipeline (locked), or None when it has none."""
    return conn.execute(
        select(lead_pipeline_placements.c.stage_id)
        .where(
            lead_pipeline_placements.c.organization_id == organization_id,
            lead_pipeline_placements.c.lead_id == lead_id,
            lead_pipeline_placements.c.pipeline_id == pipeline_id,
        )
        .with_for_update()
    ).scalar_one_or_none()


def _secondary_target(
    conn: Connection, actor: Actor, lead: LeadPosition, pipeline_id: uuid.UUID, stage_id: uuid.UUID
) -> StageRow:
    target = resolve_stage(conn, actor.organization_id, stage_id)
    refusal = target_refusal(pipeline_id, target, lead.converted)
    if refusal:
        raise refusal_error(refusal)
    return target


def add_to_pipeline(
    uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, pipeline_id: uuid.UUID, stage_id: uuid.UUID | None
) -> Placement:
    """Places the lead in another pipeline (on `stage_id`, else that pipeline's first active `new` stage).

    409 ALREADY_IN_PIPELINE for its primary pipeline or one it is already in; a converted stage there is
    refused unless the lead is converted. The status does not change: only the primary placement drives it.
    """
    conn = uow.connection
    row = lock_lead(conn, actor.organization_id, lead_id)
    lead = _position(row)
    _require_pipeline(conn, actor.organization_id, pipeline_id)
    if pipeline_id == lead.pipeline_id:
        raise _already_in_pipeline()
    if stage_id is not None:
        target = _secondary_target(conn, actor, lead, pipeline_id, stage_id)
    else:
        found = first_active_stage(conn, actor.organization_id, pipeline_id, StageCategory.NEW)
        if found is None:
            raise BadRequest("The pipeline has no active New stage.", code="NO_STAGE_FOR_STATUS", status="new")
        target = found
    # The unique (lead, pipeline) index decides a race between two adds; the lead lock makes it rare.
    added = conn.execute(
        pg_insert(lead_pipeline_placements)
        .values(
            id=uuid7(),
            organization_id=actor.organization_id,
            lead_id=lead_id,
            pipeline_id=pipeline_id,
            stage_id=target.id,
        )
        .on_conflict_do_nothing(index_elements=["lead_id", "pipeline_id"])
        .returning(lead_pipeline_placements.c.id)
    ).first()
    if added is None:
        raise _already_in_pipeline()
    record_activities(
        conn,
        [_activity(actor, lead_id, PIPELINE_ADDED, {"pipelineId": str(pipeline_id), "stageId": str(target.id)})],
    )
    return Placement(lead_id=lead_id, pipeline_id=pipeline_id, stage_id=target.id, is_primary=False)


def _already_in_pipeline() -> Conflict:
    return Conflict("The lead is already in this pipeline.", code="ALREADY_IN_PIPELINE")


def move_in_pipeline(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    pipeline_id: uuid.UUID,
    stage_id: uuid.UUID,
    *,
    lost_reason: str | None = None,
) -> Placement:
    """Moves the lead's placement in `pipeline_id` onto `stage_id`.

    In the primary pipeline this is the full primary move (status follows); in a secondary one only the
    placement moves (a stage_moved timeline entry naming the pipeline, no status change). The conversion
    rule holds in both.
    """
    conn = uow.connection
    row = lock_lead(conn, actor.organization_id, lead_id)
    lead = _position(row)
    if pipeline_id == lead.pipeline_id:
        updated = update_lead(uow, actor, lead_id, LeadUpdate(stage_id=stage_id, lost_reason=lost_reason), locked=row)
        return Placement(lead_id=lead_id, pipeline_id=pipeline_id, stage_id=updated["stage_id"], is_primary=True)
    current_stage = _lock_placement(conn, actor.organization_id, lead_id, pipeline_id)
    if current_stage is None:
        raise _placement_not_found()
    if lost_reason is not None:
        # A secondary placement does not drive the status: there is no lost lead to keep a reason for.
        raise refusal_error(MoveRefusal.LOST_REASON_NOT_LOST)
    if stage_id == current_stage:
        return Placement(lead_id=lead_id, pipeline_id=pipeline_id, stage_id=stage_id, is_primary=False)
    target = _secondary_target(conn, actor, lead, pipeline_id, stage_id)
    conn.execute(
        update(lead_pipeline_placements)
        .where(
            lead_pipeline_placements.c.organization_id == actor.organization_id,
            lead_pipeline_placements.c.lead_id == lead_id,
            lead_pipeline_placements.c.pipeline_id == pipeline_id,
        )
        .values(stage_id=target.id, updated_at=func.now())
    )
    record_activities(
        conn,
        [
            _activity(
                actor,
                lead_id,
                STAGE_MOVED,
                {
                    "pipelineId": str(pipeline_id),
                    "primary": False,
                    "fromStageId": str(current_stage),
                    "toStageId": str(target.id),
                    "toCategory": target.category.value,
                },
            )
        ],
    )
    return Placement(lead_id=lead_id, pipeline_id=pipeline_id, stage_id=target.id, is_primary=False)


def remove_from_pipeline(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, pipeline_id: uuid.UUID) -> None:
    """Removes a secondary placement; the primary one cannot be removed (400 PRIMARY_PIPELINE_NOT_REMOVABLE)."""
    conn = uow.connection
    row = lock_lead(conn, actor.organization_id, lead_id)
    if pipeline_id == row["pipeline_id"]:
        raise BadRequest(
            "The lead's primary pipeline cannot be removed; make another pipeline primary first.",
            code="PRIMARY_PIPELINE_NOT_REMOVABLE",
        )
    removed = conn.execute(
        delete(lead_pipeline_placements)
        .where(
            lead_pipeline_placements.c.organization_id == actor.organization_id,
            lead_pipeline_placements.c.lead_id == lead_id,
            lead_pipeline_placements.c.pipeline_id == pipeline_id,
        )
        .returning(lead_pipeline_placements.c.stage_id)
    ).scalar_one_or_none()
    if removed is None:
        raise _placement_not_found()
    record_activities(
        conn,
        [_activity(actor, lead_id, PIPELINE_REMOVED, {"pipelineId": str(pipeline_id), "stageId": str(removed)})],
    )


def set_primary(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    pipeline_id: uuid.UUID,
    *,
    lost_reason: str | None = None,
) -> dict[str, Any]:
    """Promotes the lead's placement in `pipeline_id` to primary and demotes the old primary to a placement.

    The status re-mirrors from the promoted stage's category through the same rules as every primary move
    (a status event for the stage change; lead.status_changed on a real category change); a swap cannot
    fabricate a conversion (400 CONVERT_REQUIRED) and entering lost needs a reason. A primary_changed
    timeline entry records the swap. Already primary: nothing changes. Not a placement: 404.
    """
    conn = uow.connection
    row = lock_lead(conn, actor.organization_id, lead_id)
    lead = _position(row)
    if pipeline_id == lead.pipeline_id:
        if lost_reason is not None:
            raise refusal_error(MoveRefusal.LOST_REASON_NOT_LOST)
        return _public(row)
    promoted_stage_id = _lock_placement(conn, actor.organization_id, lead_id, pipeline_id)
    if promoted_stage_id is None:
        raise _placement_not_found()
    _require_pipeline(conn, actor.organization_id, pipeline_id)
    new_primary = resolve_stage(conn, actor.organization_id, promoted_stage_id)
    try:
        move = plan_primary_swap(lead, new_primary, lost_reason=lost_reason)
    except MoveRefused as refused:
        raise refusal_error(refused.refusal) from None
    # The placement row now holds the old primary: the (lead, pipeline) pair stays unique throughout.
    conn.execute(
        update(lead_pipeline_placements)
        .where(
            lead_pipeline_placements.c.organization_id == actor.organization_id,
            lead_pipeline_placements.c.lead_id == lead_id,
            lead_pipeline_placements.c.pipeline_id == pipeline_id,
        )
        .values(pipeline_id=lead.pipeline_id, stage_id=lead.stage_id, updated_at=func.now())
    )
    updated = _update_lead(conn, row, {**_primary_move_values(move), "pipeline_id": pipeline_id})
    _record_primary_move(uow, actor, move)
    payload = {
        "fromPipelineId": str(lead.pipeline_id),
        "toPipelineId": str(pipeline_id),
        "fromStageId": str(move.from_stage_id),
        "toStageId": str(move.to_stage_id),
        "fromStatus": move.from_status.value,
        "toStatus": move.to_status.value,
    }
    if move.status_reason:
        payload["lostReason"] = move.status_reason
    record_activities(conn, [_activity(actor, lead_id, PRIMARY_CHANGED, payload)])
    return updated


# -- bulk stage move ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BulkMoveResult:
    moved: list[uuid.UUID]
    skipped: list[tuple[uuid.UUID, str]]


# Many values travel as ONE parameter that PostgreSQL unpacks: pg8000 converts a list parameter element by
# element in Python (about 0.1 ms per element), while a string is sent as it is.


def _id_list(name: str, ids: Sequence[uuid.UUID]) -> Any:
    """The ids as a uuid[] for `= ANY(…)`: an array literal cast in SQL.

    The cast sits in a scalar subquery, so PostgreSQL runs it once (an InitPlan) instead of for every row it
    filters (a text-to-array cast is not constant-folded: with 10k ids that is 10k parses of 10k ids). The
    outer cast keeps `= ANY(array)` from being read as `= ANY(subquery)`.
    """
    literal_array = "{" + ",".join(str(i) for i in ids) + "}"
    once = select(cast(bindparam(name, literal_array, type_=Text), ARRAY(Uuid))).scalar_subquery()
    return cast(once, ARRAY(Uuid))


def bulk_move_stage(
    uow: UnitOfWork,
    actor: Actor,
    stage_id: uuid.UUID,
    lead_ids: list[uuid.UUID],
    *,
    lost_reason: str | None = None,
) -> BulkMoveResult:
    """Moves many leads onto one stage in a fixed number of statements, whatever their number.

    The target stage's pipeline decides: leads whose primary pipeline it is move by the primary rules (one
    UPDATE for all, one INSERT … SELECT for their status events, one for their timeline entries, and one
    lead.status_changed per category change); leads with a secondary placement there move it (one UPDATE).
    Unconverted leads aimed at a converted stage, leads not in the pipeline and ids that are not leads of
    the organization are skipped and reported. A move into lost needs `lost_reason` (400 otherwise).
    """
    conn = uow.connection
    target = resolve_stage(conn, actor.organization_id, stage_id)
    if target.archived_at is not None:
        raise refusal_error(MoveRefusal.STAGE_ARCHIVED)
    requested = list(distinct_in_order(lead_ids))
    candidates = _lock_bulk_candidates(conn, actor.organization_id, target.pipeline_id, requested)
    try:
        plan = plan_bulk_move(requested, candidates, target, lost_reason)
    except MoveRefused as refused:
        raise refusal_error(refused.refusal) from None

    if plan.primary_moves:
        _bulk_update_primary(conn, actor, target, plan.primary_moves)
        _bulk_insert_status_events(conn, actor, plan.primary_moves)
        for move in plan.primary_moves:
            if move.category_changed:
                uow.add_event(_status_changed_event(actor, move))
    if plan.secondary_moves:
        secondary_ids = [lead_id for lead_id, _ in plan.secondary_moves]
        conn.execute(
            update(lead_pipeline_placements)
            .where(
                lead_pipeline_placements.c.organization_id == actor.organization_id,
                lead_pipeline_placements.c.pipeline_id == target.pipeline_id,
                lead_pipeline_placements.c.lead_id == func.any(_id_list("secondary_ids", secondary_ids)),
            )
            .values(stage_id=target.id, updated_at=func.now())
        )
    _bulk_record_stage_moved(conn, actor, target, plan.primary_moves, plan.secondary_moves)
    return BulkMoveResult(moved=plan.moved, skipped=plan.skipped)


def _lock_bulk_candidates(
    conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID, lead_ids: list[uuid.UUID]
) -> dict[uuid.UUID, BulkCandidate]:
    """The requested leads of this organization with their placement in the pipeline, locked in id order."""
    if not lead_ids:
        return {}
    placement = lead_pipeline_placements
    rows = conn.execute(
        select(
            leads.c.id,
            leads.c.pipeline_id,
            leads.c.stage_id,
            leads.c.status,
            leads.c.converted_membership_id,
            leads.c.lost_reason,
            placement.c.stage_id.label("placement_stage_id"),
        )
        .select_from(
            leads.outerjoin(placement, (placement.c.lead_id == leads.c.id) & (placement.c.pipeline_id == pipeline_id))
        )
        .where(leads.c.organization_id == organization_id, leads.c.id == func.any(_id_list("lead_ids", lead_ids)))
        .order_by(leads.c.id)
        # Placements are written only under their lead's lock, so locking the lead rows is enough (and
        # PostgreSQL cannot lock the nullable side of an outer join anyway).
        .with_for_update(of=leads)
    ).mappings()
    return {
        row["id"]: BulkCandidate(
            lead_id=row["id"], position=_position(row), placement_stage_id=row["placement_stage_id"]
        )
        for row in rows
    }


def _bulk_update_primary(conn: Connection, actor: Actor, target: StageRow, moves: list[StageMove]) -> None:
    """One UPDATE … FROM (the moves): each lead's own lost reason and whether its category changes."""
    moved = recordset(
        "moves",
        "moved",
        [{"lead_id": m.lead_id, "lost_reason": m.lost_reason, "category_changed": m.category_changed} for m in moves],
        {"lead_id": Uuid, "lost_reason": Text, "category_changed": Boolean},
    )
    conn.execute(
        update(leads)
        .where(leads.c.organization_id == actor.organization_id, leads.c.id == moved.c.lead_id)
        .values(
            stage_id=target.id,
            status=target.category.value,
            lost_reason=moved.c.lost_reason,
            status_changed_at=case((moved.c.category_changed, func.now()), else_=leads.c.status_changed_at),
            updated_at=func.now(),
        )
    )


def _bulk_insert_status_events(conn: Connection, actor: Actor, moves: list[StageMove]) -> None:
    """One INSERT … SELECT for every moved lead's status event."""
    source = recordset(
        "status_events",
        "status_events",
        [_status_event_row(actor, m) for m in moves],
        {
            "id": Uuid,
            "lead_id": Uuid,
            "from_status": Text,
            "to_status": Text,
            "from_stage_id": Uuid,
            "to_stage_id": Uuid,
            "reason": Text,
        },
    )
    conn.execute(
        insert(lead_status_events).from_select(
            [
                "id",
                "organization_id",
                "lead_id",
                "from_status",
                "to_status",
                "from_stage_id",
                "to_stage_id",
                "actor_user_id",
                "reason",
            ],
            select(
                source.c.id,
                literal(actor.organization_id, Uuid),
                source.c.lead_id,
                source.c.from_status,
                source.c.to_status,
                source.c.from_stage_id,
                source.c.to_stage_id,
                literal(actor.user_id, Uuid),
                source.c.reason,
            ),
        )
    )


def _bulk_record_stage_moved(
    conn: Connection,
    actor: Actor,
    target: StageRow,
    primary: list[StageMove],
    secondary: list[tuple[uuid.UUID, uuid.UUID]],
) -> None:
    payloads = [(m.lead_id, {**_stage_moved_payload(target.pipeline_id, m), "bulk": True}) for m in primary]
    payloads += [
        (
            lead_id,
            {
                "pipelineId": str(target.pipeline_id),
                "primary": False,
                "fromStageId": str(from_stage),
                "toStageId": str(target.id),
                "toCategory": target.category.value,
                "bulk": True,
            },
        )
        for lead_id, from_stage in secondary
    ]
    record_activities(conn, [_activity(actor, lead_id, STAGE_MOVED, payload) for lead_id, payload in payloads])


# -- archive -----------------------------------------------------------------------------------------------


def set_archived(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, archived: bool) -> dict[str, Any]:
    """Archives or unarchives the lead (a flag: the status and stage stay); idempotent."""
    conn = uow.connection
    row = lock_lead(conn, actor.organization_id, lead_id)
    if (row["archived_at"] is not None) == archived:
        return _public(row)
    updated = _update_lead(conn, row, {"archived_at": func.now() if archived else None})
    record_activities(conn, [_activity(actor, lead_id, ARCHIVED if archived else UNARCHIVED, {})])
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
            leads.c.id == func.any(_id_list("lead_ids", requested)),
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
                leads.c.id == func.any(_id_list("changed_ids", changed)),
            )
            .values(archived_at=func.now() if archived else None, updated_at=func.now())
        )
        kind = ARCHIVED if archived else UNARCHIVED
        record_activities(conn, [_activity(actor, lead_id, kind, {"bulk": True}) for lead_id in changed])
    return BulkArchiveResult(changed=changed, skipped=skipped)
