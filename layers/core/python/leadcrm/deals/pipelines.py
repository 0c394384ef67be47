"""The organization's deal pipeline: seeded on first use, read, and edited by owners and admins.

One deal pipeline per organization (spec section 2's New → Discovery → Proposal → Negotiation → Closed-Won /
Closed-Lost), whose stages carry a default win probability, a forecast category and, for proposal and
negotiation, a rotting threshold. Edits keep the invariants of `deals.rules.pipelines`.

Every edit takes the pipeline row first (`FOR NO KEY UPDATE`), then reads the stages and checks the rules,
so two concurrent edits run one after the other and cannot each pass a check the pair breaks. NO KEY UPDATE
does not block deal writes, whose foreign-key checks take KEY SHARE on the rows they reference.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import Connection, Row, case, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.deals.rules.deals import ForecastCategory, StageKind
from leadcrm.deals.rules.pipelines import (
    DEFAULT_DEAL_PIPELINE_NAME,
    DEFAULT_DEAL_STAGES,
    MAX_DEAL_STAGES,
    StageSettings,
    StageSlot,
    insert_position,
    require_exact_reorder,
    require_valid_order,
    require_valid_settings,
)
from leadcrm.deals.tables import deal_pipelines, deal_stages
from leadcrm.directory.rules import Actor
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import uuid7


@dataclass(frozen=True)
class DealStage:
    id: uuid.UUID
    pipeline_id: uuid.UUID
    name: str
    kind: StageKind
    probability: int
    forecast_category: ForecastCategory
    rotting_days: int | None
    position: int

    def settings(self) -> StageSettings:
        return StageSettings(self.name, self.kind, self.probability, self.forecast_category, self.rotting_days)


@dataclass(frozen=True)
class DealPipeline:
    id: uuid.UUID
    name: str
    stages: tuple[DealStage, ...]

    def stage(self, stage_id: uuid.UUID) -> DealStage:
        for stage in self.stages:
            if stage.id == stage_id:
                return stage
        raise stage_not_found()

    def first_of(self, kind: StageKind) -> DealStage | None:
        return next((s for s in self.stages if s.kind is kind), None)


def stage_not_found() -> NotFound:
    return NotFound("Deal stage not found.", code="DEAL_STAGE_NOT_FOUND")


_STAGE_COLUMNS = (
    deal_stages.c.id,
    deal_stages.c.pipeline_id,
    deal_stages.c.name,
    deal_stages.c.kind,
    deal_stages.c.probability,
    deal_stages.c.forecast_category,
    deal_stages.c.rotting_days,
    deal_stages.c.position,
)


def _stage(row: Row) -> DealStage:
    return DealStage(
        id=row.id,
        pipeline_id=row.pipeline_id,
        name=row.name,
        kind=StageKind(row.kind),
        probability=row.probability,
        forecast_category=ForecastCategory(row.forecast_category),
        rotting_days=row.rotting_days,
        position=row.position,
    )


def ensure_deal_pipeline(conn: Connection, organization_id: uuid.UUID) -> None:
    """Seeds the organization's deal pipeline unless it has one.

    Race-safe: the partial unique index allows one per organization, so of two concurrent first requests
    one inserts and the other waits on the index, conflicts, inserts nothing, and then reads the winner's
    committed rows (READ COMMITTED: each later statement sees them).
    """
    pipeline_id = uuid7()
    created = conn.execute(
        pg_insert(deal_pipelines)
        .values(id=pipeline_id, organization_id=organization_id, name=DEFAULT_DEAL_PIPELINE_NAME, is_default=True)
        .on_conflict_do_nothing(index_elements=["organization_id"], index_where=deal_pipelines.c.is_default)
        .returning(deal_pipelines.c.id)
    ).first()
    if created:
        conn.execute(
            insert(deal_stages).values(
                [
                    {
                        "id": uuid7(),
                        "organization_id": organization_id,
                        "pipeline_id": pipeline_id,
                        "name": s.name,
                        "kind": s.kind.value,
                        "probability": s.probability,
                        "forecast_category": s.forecast_category.value,
                        "rotting_days": s.rotting_days,
                        "position": position,
                    }
                    for position, s in enumerate(DEFAULT_DEAL_STAGES)
                ]
            )
        )


def get_deal_pipeline(conn: Connection, organization_id: uuid.UUID, *, lock: bool = False) -> DealPipeline:
    """The organization's deal pipeline with its stages by position, seeded when missing.

    `lock` takes the pipeline row FOR NO KEY UPDATE (the editors' serialization point)."""
    row = _pipeline_row(conn, organization_id, lock=lock)
    if row is None:
        ensure_deal_pipeline(conn, organization_id)
        row = _pipeline_row(conn, organization_id, lock=lock)
    assert row is not None  # seeded just now, or by the concurrent request we waited for
    stages = conn.execute(
        select(*_STAGE_COLUMNS)
        .where(deal_stages.c.organization_id == organization_id, deal_stages.c.pipeline_id == row.id)
        .order_by(deal_stages.c.position, deal_stages.c.id)
    ).all()
    return DealPipeline(id=row.id, name=row.name, stages=tuple(_stage(s) for s in stages))


def _pipeline_row(conn: Connection, organization_id: uuid.UUID, *, lock: bool) -> Row | None:
    query = select(deal_pipelines.c.id, deal_pipelines.c.name).where(
        deal_pipelines.c.organization_id == organization_id, deal_pipelines.c.is_default
    )
    if lock:
        query = query.with_for_update(key_share=True)
    return conn.execute(query).first()


# -- edits (owner/admin; the router applies the gate) -------------------------------------------------------


def rename_pipeline(uow: UnitOfWork, actor: Actor, name: str) -> DealPipeline:
    conn = uow.connection
    pipeline = get_deal_pipeline(conn, actor.organization_id, lock=True)
    conn.execute(
        update(deal_pipelines).where(deal_pipelines.c.id == pipeline.id).values(name=name, updated_at=sql_now())
    )
    return replace(pipeline, name=name)


def add_stage(uow: UnitOfWork, actor: Actor, settings: StageSettings, position: int | None) -> DealPipeline:
    """A new open stage (closed-won and closed-lost stay one each), by default after the last of its kind."""
    conn = uow.connection
    pipeline = get_deal_pipeline(conn, actor.organization_id, lock=True)
    if settings.kind in (StageKind.WON, StageKind.LOST):
        raise BadRequest(
            "A deal pipeline has exactly one closed-won and one closed-lost stage.", code="DEAL_STAGE_KIND"
        )
    if len(pipeline.stages) >= MAX_DEAL_STAGES:
        raise BadRequest(f"A deal pipeline has at most {MAX_DEAL_STAGES} stages.", code="DEAL_STAGE_LIMIT")
    require_valid_settings(settings)
    slots = [StageSlot(s.id, s.kind) for s in pipeline.stages]
    stage_id = uuid7()
    at = insert_position(slots, settings.kind, position)
    ordered = [*slots[:at], StageSlot(stage_id, settings.kind), *slots[at:]]
    require_valid_order(ordered)
    _renumber(conn, actor.organization_id, pipeline, [s.id for s in ordered if s.id != stage_id], skip=at)
    conn.execute(
        insert(deal_stages).values(
            id=stage_id,
            organization_id=actor.organization_id,
            pipeline_id=pipeline.id,
            name=settings.name,
            kind=settings.kind.value,
            probability=settings.probability,
            forecast_category=settings.forecast_category.value,
            rotting_days=settings.rotting_days,
            position=at,
        )
    )
    return get_deal_pipeline(conn, actor.organization_id)


@dataclass(frozen=True)
class StageChange:
    """The fields a PATCH sent; `rotting_days_sent` tells a null (never rot) from an absent field."""

    name: str | None = None
    probability: int | None = None
    forecast_category: ForecastCategory | None = None
    rotting_days: int | None = None
    rotting_days_sent: bool = False


def update_stage(uow: UnitOfWork, actor: Actor, stage_id: uuid.UUID, change: StageChange) -> DealPipeline:
    """Renames a stage, or changes its default probability, category or rotting threshold (the kind never
    changes: deals on the stage would change state silently). Deals without their own probability or
    category follow the new defaults in the forecast at once."""
    conn = uow.connection
    pipeline = get_deal_pipeline(conn, actor.organization_id, lock=True)
    stage = pipeline.stage(stage_id)
    wanted = stage.settings()
    wanted = replace(
        wanted,
        name=change.name if change.name is not None else wanted.name,
        probability=change.probability if change.probability is not None else wanted.probability,
        forecast_category=change.forecast_category or wanted.forecast_category,
        rotting_days=change.rotting_days if change.rotting_days_sent else wanted.rotting_days,
    )
    require_valid_settings(wanted)
    if wanted != stage.settings():
        conn.execute(
            update(deal_stages)
            .where(deal_stages.c.organization_id == actor.organization_id, deal_stages.c.id == stage_id)
            .values(
                name=wanted.name,
                probability=wanted.probability,
                forecast_category=wanted.forecast_category.value,
                rotting_days=wanted.rotting_days,
                updated_at=sql_now(),
            )
        )
    return get_deal_pipeline(conn, actor.organization_id)


def reorder_stages(uow: UnitOfWork, actor: Actor, stage_ids: Sequence[uuid.UUID]) -> DealPipeline:
    """Puts every stage in the order given, which must keep the phase order."""
    conn = uow.connection
    pipeline = get_deal_pipeline(conn, actor.organization_id, lock=True)
    require_exact_reorder([s.id for s in pipeline.stages], stage_ids)
    require_valid_order([StageSlot(i, pipeline.stage(i).kind) for i in stage_ids])
    _renumber(conn, actor.organization_id, pipeline, list(stage_ids))
    return get_deal_pipeline(conn, actor.organization_id)


def _renumber(
    conn: Connection,
    organization_id: uuid.UUID,
    pipeline: DealPipeline,
    ordered_ids: Sequence[uuid.UUID],
    *,
    skip: int | None = None,
) -> None:
    """Writes the positions that changed in one UPDATE (a CASE over the ids); `skip` leaves a gap there."""
    positions = {}
    for index, stage_id in enumerate(ordered_ids):
        positions[stage_id] = index + 1 if skip is not None and index >= skip else index
    changed = {s.id: positions[s.id] for s in pipeline.stages if positions.get(s.id, s.position) != s.position}
    if not changed:
        return
    conn.execute(
        update(deal_stages)
        .where(deal_stages.c.organization_id == organization_id, deal_stages.c.id.in_(list(changed)))
        .values(position=case(changed, value=deal_stages.c.id), updated_at=sql_now())
    )
