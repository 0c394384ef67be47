"""The bulk stage move: many leads onto one stage in a fixed number of statements.

The same rules as a single move (`plan_bulk_move`), written set-based: the leads are taken in id order (two
bulk requests over overlapping leads queue instead of deadlocking), and the rows written are those of
`leads.moves` (status events, `lead.status_changed` on a category change, `stage_moved` entries).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Boolean,
    Connection,
    Text,
    Uuid,
    case,
    cast,
    false,
    func,
    insert,
    literal,
    literal_column,
    not_,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.directory.rules import Actor
from leadcrm.leads.moves import (
    STAGE_MOVED,
    id_list,
    refusal_error,
    status_changed_events,
)
from leadcrm.leads.rules.moves import (
    CATEGORY_OF,
    BulkCandidate,
    LeadPosition,
    MoveRefusal,
    MoveRefused,
    StageMove,
    distinct_in_order,
    plan_bulk_move,
)
from leadcrm.leads.tables import lead_activity_events, lead_pipeline_placements, lead_status_events, leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.stages import StageRow, resolve_stage
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7


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

    for event in status_changed_events(actor, plan.primary_moves):
        uow.add_event(event)
    if plan.primary_moves or plan.secondary_moves:
        uow.execute_with_events(_bulk_move_statement(actor, target, plan.primary_moves, plan.secondary_moves))
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
            # is_converted, computed where the row is: no membership id to carry back and convert per lead
            (leads.c.converted_membership_id.is_not(None) | (leads.c.status == StageCategory.CONVERTED.value)),
            leads.c.lost_reason,
            placement.c.stage_id,
        )
        .select_from(
            leads.outerjoin(placement, (placement.c.lead_id == leads.c.id) & (placement.c.pipeline_id == pipeline_id))
        )
        .where(leads.c.organization_id == organization_id, leads.c.id == func.any(id_list("lead_ids", lead_ids)))
        .order_by(leads.c.id)
        # Placements are written only under their lead's lock, so locking the lead rows is enough (and
        # PostgreSQL cannot lock the nullable side of an outer join anyway).
        .with_for_update(of=leads)
    )
    # Positional rows and a dict lookup for the category: this loop runs once per requested lead.
    category_of = CATEGORY_OF
    return {
        lead_id: BulkCandidate(
            lead_id=lead_id,
            position=LeadPosition(lead_id, pipeline, stage, category_of[status], converted, lost_reason),
            placement_stage_id=placement_stage,
        )
        for lead_id, pipeline, stage, status, converted, lost_reason, placement_stage in rows
    }


def _bulk_move_statement(
    actor: Actor, target: StageRow, primary: list[StageMove], secondary: list[tuple[uuid.UUID, uuid.UUID]]
) -> Any:
    """The whole move as one statement over one document of the moves: the primary leads' UPDATE, their status
    events, the secondary placements' UPDATE and every lead's `stage_moved` entry (data-modifying CTEs; the
    outbox rows join them through `execute_with_events`). Each row and payload is built by PostgreSQL from
    the document, so Python serializes each move once."""
    # Each row written out here (ids as text: the encoder's fallback is slower); a stage id once per stage.
    stage_text: dict[uuid.UUID, str] = {}

    def stage(value: uuid.UUID) -> str:
        written = stage_text.get(value)
        if written is None:
            written = stage_text[value] = str(value)
        return written

    document = recordset(
        "moves",
        "moves_document",
        [
            {
                "lead_id": str(m.lead_id),
                "is_primary": True,
                "from_stage_id": stage(m.from_stage_id),
                "from_status": m.from_status.value,
                "lost_reason": m.lost_reason,
                "status_reason": m.status_reason,
                "category_changed": m.category_changed,
                "status_event_id": str(uuid7()),
                "activity_id": str(uuid7()),
            }
            for m in primary
        ]
        + [
            {
                "lead_id": str(lead_id),
                "is_primary": False,
                "from_stage_id": stage(from_stage),
                "activity_id": str(uuid7()),
            }
            for lead_id, from_stage in secondary
        ],
        {
            "lead_id": Uuid,
            "is_primary": Boolean,
            "from_stage_id": Uuid,
            "from_status": Text,
            "lost_reason": Text,
            "status_reason": Text,
            "category_changed": Boolean,
            "status_event_id": Uuid,
            "activity_id": Uuid,
        },
    )
    # The document is bound and unpacked once; the four writes read the unpacked rows.
    moves = select(*document.c).cte("moves").prefix_with("MATERIALIZED")
    organization_id = literal(actor.organization_id, Uuid)
    actor_id = literal(actor.user_id, Uuid)
    to_status = literal(target.category.value, Text)
    to_stage = literal(target.id, Uuid)
    primary_leads = (
        update(leads)
        .where(leads.c.organization_id == organization_id, leads.c.id == moves.c.lead_id, moves.c.is_primary)
        .values(
            stage_id=to_stage,
            status=to_status,
            lost_reason=moves.c.lost_reason,
            status_changed_at=case((moves.c.category_changed, sql_now()), else_=leads.c.status_changed_at),
            updated_at=sql_now(),
        )
    )
    status_events = insert(lead_status_events).from_select(
        ["id", "organization_id", "lead_id", "from_status", "to_status", "from_stage_id", "to_stage_id",
         "actor_user_id", "reason"],
        select(moves.c.status_event_id, organization_id, moves.c.lead_id, moves.c.from_status, to_status,
               moves.c.from_stage_id, to_stage, actor_id, moves.c.status_reason).where(moves.c.is_primary),
    )  # fmt: skip
    placements = lead_pipeline_placements
    secondary_placements = (
        update(placements)
        .where(
            placements.c.organization_id == organization_id,
            placements.c.pipeline_id == literal(target.pipeline_id, Uuid),
            placements.c.lead_id == moves.c.lead_id,
            not_(moves.c.is_primary),
        )
        .values(stage_id=to_stage, updated_at=sql_now())
    )
    common = {
        "pipelineId": literal(str(target.pipeline_id), Text),
        "fromStageId": cast(moves.c.from_stage_id, Text),
        "toStageId": literal(str(target.id), Text),
        "bulk": true(),
    }
    primary_payload = _jsonb_object(
        {**common, "primary": true(), "fromStatus": moves.c.from_status, "toStatus": to_status}
    ).op("||")(
        case(
            (moves.c.status_reason.is_not(None), _jsonb_object({"lostReason": moves.c.status_reason})),
            else_=literal_column("'{}'::jsonb"),
        )
    )
    secondary_payload = _jsonb_object({**common, "primary": false(), "toCategory": to_status})
    activities = insert(lead_activity_events).from_select(
        ["id", "organization_id", "lead_id", "type", "payload", "actor_user_id"],
        select(
            moves.c.activity_id,
            organization_id,
            moves.c.lead_id,
            literal(STAGE_MOVED, Text),
            case((moves.c.is_primary, primary_payload), else_=secondary_payload),
            actor_id,
        ),
    )
    return (
        select(func.count())
        .select_from(moves)
        .add_cte(moves)
        .add_cte(primary_leads.cte("primary_leads"))
        .add_cte(status_events.cte("status_events"))
        .add_cte(secondary_placements.cte("secondary_placements"))
        .add_cte(activities.cte("stage_moved_entries"))
    )


def _jsonb_object(fields: dict[str, Any]) -> Any:
    parts = [part for key, value in fields.items() for part in (literal(key, Text), value)]
    return func.jsonb_build_object(*parts, type_=JSONB)
