"""A lead's secondary pipelines: add, move within, remove, and set-primary (promote a placement).

Only the primary placement drives the status: a secondary placement moves without a status change, while a
move in the primary pipeline and a set-primary swap go through the primary move machinery of
`leads.moves` (the same status event, `lead.status_changed` and timeline entries as a PATCH).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activities
from leadcrm.leads.moves import (
    STAGE_MOVED,
    LeadUpdate,
    activity_row,
    lead_position,
    lock_lead,
    primary_move_values,
    public_lead,
    record_primary_move,
    refusal_error,
    secondary_stage_moved_payload,
    update_lead,
    update_lead_row,
)
from leadcrm.leads.rules.moves import LeadPosition, MoveRefusal, MoveRefused, plan_primary_swap, target_refusal
from leadcrm.leads.tables import lead_pipeline_placements
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.stages import StageRow, first_active_stage, resolve_stage
from leadcrm.pipelines.tables import pipelines
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.ids import uuid7

# Timeline entry types (lead_activity_events.type) this module writes besides stage_moved.
PIPELINE_ADDED = "pipeline_added"
PIPELINE_REMOVED = "pipeline_removed"
PRIMARY_CHANGED = "primary_changed"


def _placement_not_found() -> NotFound:
    return NotFound("The lead is not in this pipeline.", code="PLACEMENT_NOT_FOUND")


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
    lead = lead_position(row)
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
        [activity_row(actor, lead_id, PIPELINE_ADDED, {"pipelineId": str(pipeline_id), "stageId": str(target.id)})],
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
    lead = lead_position(row)
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
        .values(stage_id=target.id, updated_at=sql_now())
    )
    record_activities(
        conn,
        [
            activity_row(
                actor,
                lead_id,
                STAGE_MOVED,
                secondary_stage_moved_payload(target, current_stage),
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
        [activity_row(actor, lead_id, PIPELINE_REMOVED, {"pipelineId": str(pipeline_id), "stageId": str(removed)})],
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
    lead = lead_position(row)
    if pipeline_id == lead.pipeline_id:
        if lost_reason is not None:
            raise refusal_error(MoveRefusal.LOST_REASON_NOT_LOST)
        return public_lead(row)
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
        .values(pipeline_id=lead.pipeline_id, stage_id=lead.stage_id, updated_at=sql_now())
    )
    updated = update_lead_row(conn, row, {**primary_move_values(move), "pipeline_id": pipeline_id})
    record_primary_move(uow, actor, move)
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
    record_activities(conn, [activity_row(actor, lead_id, PRIMARY_CHANGED, payload)])
    return updated
