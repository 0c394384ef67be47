"""The bulk stage move: many leads onto one stage in a fixed number of statements.

The same rules as a single move (`plan_bulk_move`), written set-based: the leads are taken in id order (two
bulk requests over overlapping leads queue instead of deadlocking), and the rows written are those of
`leads.moves` (status events, `lead.status_changed` on a category change, `stage_moved` entries).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Boolean, Connection, Text, Uuid, case, func, insert, literal, select, update

from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activities
from leadcrm.leads.moves import (
    STAGE_MOVED,
    activity_row,
    id_list,
    lead_position,
    refusal_error,
    stage_moved_payload,
    status_changed_event,
    status_event_row,
)
from leadcrm.leads.rules.moves import (
    BulkCandidate,
    MoveRefusal,
    MoveRefused,
    StageMove,
    distinct_in_order,
    plan_bulk_move,
)
from leadcrm.leads.tables import lead_pipeline_placements, lead_status_events, leads
from leadcrm.pipelines.stages import StageRow, resolve_stage
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork


@dataclass(frozen=True)
class BulkMoveResult:
    moved: list[uuid.UUID]
    skipped: list[tuple[uuid.UUID, str]]


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
                uow.add_event(status_changed_event(actor, move))
    if plan.secondary_moves:
        secondary_ids = [lead_id for lead_id, _ in plan.secondary_moves]
        conn.execute(
            update(lead_pipeline_placements)
            .where(
                lead_pipeline_placements.c.organization_id == actor.organization_id,
                lead_pipeline_placements.c.pipeline_id == target.pipeline_id,
                lead_pipeline_placements.c.lead_id == func.any(id_list("secondary_ids", secondary_ids)),
            )
            .values(stage_id=target.id, updated_at=sql_now())
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
        .where(leads.c.organization_id == organization_id, leads.c.id == func.any(id_list("lead_ids", lead_ids)))
        .order_by(leads.c.id)
        # Placements are written only under their lead's lock, so locking the lead rows is enough (and
        # PostgreSQL cannot lock the nullable side of an outer join anyway).
        .with_for_update(of=leads)
    ).mappings()
    return {
        row["id"]: BulkCandidate(
            lead_id=row["id"], position=lead_position(row), placement_stage_id=row["placement_stage_id"]
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
            status_changed_at=case((moved.c.category_changed, sql_now()), else_=leads.c.status_changed_at),
            updated_at=sql_now(),
        )
    )


def _bulk_insert_status_events(conn: Connection, actor: Actor, moves: list[StageMove]) -> None:
    """One INSERT … SELECT for every moved lead's status event."""
    source = recordset(
        "status_events",
        "status_events",
        [status_event_row(actor, m) for m in moves],
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
    payloads = [(m.lead_id, {**stage_moved_payload(target.pipeline_id, m), "bulk": True}) for m in primary]
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
    record_activities(conn, [activity_row(actor, lead_id, STAGE_MOVED, payload) for lead_id, payload in payloads])
