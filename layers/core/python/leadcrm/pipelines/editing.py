"""The staff edits of pipelines and their stages: create, rename and archive a pipeline; add, edit,
reorder and archive a stage.

Every stage edit takes the pipeline row first (`FOR NO KEY UPDATE`) and only then reads the stages and
checks the rules, so two concurrent edits of one pipeline run one after the other and cannot each pass the
win-coverage check and together break it. NO KEY UPDATE rather than UPDATE: it serializes the editors just
the same, but does not block (or deadlock with) lead writes, whose foreign-key checks take KEY SHARE on the
pipeline row.

A stage that is archived or changes category is also taken `FOR UPDATE` before its leads are counted. A lead
write referencing the stage holds KEY SHARE on it (the foreign-key check, and `pipelines.stages.resolve_stage`
/ `first_active_stage`), so the count waits for in-flight moves into the stage and later moves wait for the
edit: a lead never lands on a stage that was archived meanwhile, and a category never changes under one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Row, case, func, insert, select, update

from leadcrm.directory.rules import Actor
from leadcrm.leads.tables import lead_pipeline_placements, leads
from leadcrm.pipelines.queries import (
    PIPELINE_COLUMNS,
    PipelineView,
    StageView,
    get_pipeline,
    pipeline_view,
    read_stages,
)
from leadcrm.pipelines.rules.editing import (
    MAX_ACTIVE_PIPELINES_PER_ORGANIZATION,
    MAX_STAGES_PER_PIPELINE,
    StageSlot,
    active_categories_after_archive,
    active_categories_after_recategorize,
    order_with_inserted,
    renumbered,
    require_exact_reorder,
    require_win_coverage,
)
from leadcrm.pipelines.rules.statuses import DEFAULT_STAGES, StageCategory
from leadcrm.pipelines.stages import pipeline_not_found
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.ids import uuid7

# -- pipeline edits (owner/admin; the router applies the gate) -------------------------------------------


@dataclass(frozen=True)
class NewStage:
    name: str
    category: StageCategory


def create_pipeline(uow: UnitOfWork, actor: Actor, name: str, stages: Sequence[NewStage] | None = None) -> PipelineView:
    """A pipeline with the given stages (which must cover new, a win and lost), or one stage per category
    like the default pipeline when none are given."""
    conn = uow.connection
    wanted = list(stages) if stages else [NewStage(name=n, category=c) for c, n in DEFAULT_STAGES]
    require_win_coverage(s.category for s in wanted)
    if len(wanted) > MAX_STAGES_PER_PIPELINE:
        raise _stage_limit()
    active = conn.execute(
        select(func.count())
        .select_from(pipelines)
        .where(pipelines.c.organization_id == actor.organization_id, pipelines.c.archived_at.is_(None))
    ).scalar_one()
    if active >= MAX_ACTIVE_PIPELINES_PER_ORGANIZATION:
        raise Conflict(
            f"An organization has at most {MAX_ACTIVE_PIPELINES_PER_ORGANIZATION} active pipelines; archive one first.",
            code="PIPELINE_LIMIT_REACHED",
            limit=MAX_ACTIVE_PIPELINES_PER_ORGANIZATION,
        )
    pipeline_id = uuid7()
    row = conn.execute(
        insert(pipelines)
        .values(id=pipeline_id, organization_id=actor.organization_id, name=name, is_default=False)
        .returning(*PIPELINE_COLUMNS)
    ).one()
    stage_values = [
        {
            "id": uuid7(),
            "organization_id": actor.organization_id,
            "pipeline_id": pipeline_id,
            "name": stage.name,
            "category": stage.category.value,
            "position": position,
        }
        for position, stage in enumerate(wanted)
    ]
    # One multi-row INSERT: a statement, not one round trip per stage.
    conn.execute(insert(pipeline_stages).values(stage_values))
    views = [
        StageView(
            id=v["id"], name=v["name"], category=StageCategory(v["category"]), position=v["position"], archived_at=None
        )
        for v in stage_values
    ]
    return pipeline_view(row, views)


def rename_pipeline(uow: UnitOfWork, actor: Actor, pipeline_id: uuid.UUID, name: str) -> PipelineView:
    conn = uow.connection
    _lock_editable_pipeline(conn, actor.organization_id, pipeline_id)
    conn.execute(
        update(pipelines)
        .where(pipelines.c.organization_id == actor.organization_id, pipelines.c.id == pipeline_id)
        .values(name=name, updated_at=sql_now())
    )
    return get_pipeline(conn, actor.organization_id, pipeline_id, include_archived_stages=False)


def archive_pipeline(uow: UnitOfWork, actor: Actor, pipeline_id: uuid.UUID) -> PipelineView:
    """Archives a pipeline (again: nothing changes). Its leads stay where they are; a reopened lead whose
    pipeline is archived goes to the organization's default (returning leads), which is why the default
    pipeline itself can never be archived."""
    conn = uow.connection
    locked = _lock_pipeline(conn, actor.organization_id, pipeline_id)
    if locked.is_default:
        raise BadRequest("The default pipeline cannot be archived.", code="DEFAULT_PIPELINE_CANNOT_BE_ARCHIVED")
    if locked.archived_at is None:
        conn.execute(
            update(pipelines)
            .where(pipelines.c.organization_id == actor.organization_id, pipelines.c.id == pipeline_id)
            .values(archived_at=sql_now(), updated_at=sql_now())
        )
    return get_pipeline(conn, actor.organization_id, pipeline_id, include_archived_stages=False)


# -- stage edits -----------------------------------------------------------------------------------------


def add_stage(
    uow: UnitOfWork,
    actor: Actor,
    pipeline_id: uuid.UUID,
    new: NewStage,
    position: int | None = None,
) -> StageView:
    """A new active stage at `position` among the active stages (default: last); later stages shift."""
    conn = uow.connection
    _lock_editable_pipeline(conn, actor.organization_id, pipeline_id)
    stages = _stages_of(conn, actor.organization_id, pipeline_id)
    active = [s.id for s in stages if s.archived_at is None]
    if len(active) >= MAX_STAGES_PER_PIPELINE:
        raise _stage_limit()
    stage_id = uuid7()
    positions = renumbered(order_with_inserted(active, stage_id, position), _archived_ids(stages))
    _apply_positions(conn, actor.organization_id, pipeline_id, stages, positions)
    conn.execute(
        insert(pipeline_stages).values(
            id=stage_id,
            organization_id=actor.organization_id,
            pipeline_id=pipeline_id,
            name=new.name,
            category=new.category.value,
            position=positions[stage_id],
        )
    )
    return StageView(id=stage_id, name=new.name, category=new.category, position=positions[stage_id], archived_at=None)


def update_stage(
    uow: UnitOfWork,
    actor: Actor,
    pipeline_id: uuid.UUID,
    stage_id: uuid.UUID,
    *,
    name: str | None = None,
    category: StageCategory | None = None,
) -> StageView:
    """Renames a stage and/or changes its category. A category change must keep win coverage, and is
    refused while leads are on the stage: their status mirrors the category and would change silently."""
    conn = uow.connection
    _lock_editable_pipeline(conn, actor.organization_id, pipeline_id)
    stages = _stages_of(conn, actor.organization_id, pipeline_id)
    stage = _active_stage(stages, stage_id)
    values: dict[str, object] = {}
    if name is not None and name != stage.name:
        values["name"] = name
    if category is not None and category != stage.category:
        require_win_coverage(active_categories_after_recategorize(_slots(stages), stage_id, category))
        _refuse_when_stage_holds_leads(conn, actor.organization_id, pipeline_id, stage_id)
        values["category"] = category.value
    if not values:
        return stage
    conn.execute(
        update(pipeline_stages)
        .where(pipeline_stages.c.organization_id == actor.organization_id, pipeline_stages.c.id == stage_id)
        .values(**values, updated_at=sql_now())
    )
    return StageView(
        id=stage.id,
        name=name if name is not None else stage.name,
        category=category if category is not None else stage.category,
        position=stage.position,
        archived_at=None,
    )


def reorder_stages(
    uow: UnitOfWork, actor: Actor, pipeline_id: uuid.UUID, stage_ids: Sequence[uuid.UUID]
) -> PipelineView:
    """Puts the active stages in the order given; the list must be exactly the pipeline's active stages."""
    conn = uow.connection
    _lock_editable_pipeline(conn, actor.organization_id, pipeline_id)
    stages = _stages_of(conn, actor.organization_id, pipeline_id)
    require_exact_reorder([s.id for s in stages if s.archived_at is None], stage_ids)
    positions = renumbered(stage_ids, _archived_ids(stages))
    _apply_positions(conn, actor.organization_id, pipeline_id, stages, positions)
    return get_pipeline(conn, actor.organization_id, pipeline_id, include_archived_stages=False)


def archive_stage(uow: UnitOfWork, actor: Actor, pipeline_id: uuid.UUID, stage_id: uuid.UUID) -> StageView:
    """Archives a stage that holds no lead and whose loss keeps win coverage (again: nothing changes).
    It moves behind the active stages, which close ranks."""
    conn = uow.connection
    _lock_editable_pipeline(conn, actor.organization_id, pipeline_id)
    stages = _stages_of(conn, actor.organization_id, pipeline_id)
    stage = _stage_in(stages, stage_id)
    if stage.archived_at is not None:
        return stage
    require_win_coverage(active_categories_after_archive(_slots(stages), stage_id))
    _refuse_when_stage_holds_leads(conn, actor.organization_id, pipeline_id, stage_id)
    archived_at = conn.execute(
        update(pipeline_stages)
        .where(pipeline_stages.c.organization_id == actor.organization_id, pipeline_stages.c.id == stage_id)
        .values(archived_at=sql_now(), updated_at=sql_now())
        .returning(pipeline_stages.c.archived_at)
    ).scalar_one()
    active = [s.id for s in stages if s.archived_at is None and s.id != stage_id]
    positions = renumbered(active, [*_archived_ids(stages), stage_id])
    _apply_positions(conn, actor.organization_id, pipeline_id, stages, positions)
    return StageView(
        id=stage.id, name=stage.name, category=stage.category, position=positions[stage_id], archived_at=archived_at
    )


# -- helpers ---------------------------------------------------------------------------------------------


def _lock_pipeline(conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> Row:
    """The pipeline row, locked until the transaction ends (see the module docstring for the lock mode)."""
    row = conn.execute(
        select(pipelines.c.id, pipelines.c.is_default, pipelines.c.archived_at)
        .where(pipelines.c.organization_id == organization_id, pipelines.c.id == pipeline_id)
        .with_for_update(key_share=True)
    ).first()
    if row is None:
        raise pipeline_not_found()
    return row


def _lock_editable_pipeline(conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> Row:
    """An archived pipeline is kept as it was: its name and stages no longer change."""
    row = _lock_pipeline(conn, organization_id, pipeline_id)
    if row.archived_at is not None:
        raise Conflict("This pipeline is archived.", code="PIPELINE_ARCHIVED")
    return row


def _stages_of(conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> list[StageView]:
    """All the pipeline's stages, archived too, by position. Called after the pipeline lock is held, so it
    reads what the previous editor committed."""
    return read_stages(conn, organization_id, [pipeline_id], include_archived=True).get(pipeline_id, [])


def _stage_in(stages: Sequence[StageView], stage_id: uuid.UUID) -> StageView:
    """The stage among this pipeline's; a stage of another pipeline (or organization) is not found."""
    for stage in stages:
        if stage.id == stage_id:
            return stage
    raise NotFound("Stage not found.", code="STAGE_NOT_FOUND")


def _active_stage(stages: Sequence[StageView], stage_id: uuid.UUID) -> StageView:
    stage = _stage_in(stages, stage_id)
    if stage.archived_at is not None:
        raise Conflict("This stage is archived.", code="STAGE_ARCHIVED")
    return stage


def _slots(stages: Sequence[StageView]) -> list[StageSlot]:
    return [StageSlot(id=s.id, category=s.category, archived=s.archived_at is not None) for s in stages]


def _archived_ids(stages: Sequence[StageView]) -> list[uuid.UUID]:
    return [s.id for s in stages if s.archived_at is not None]


def _apply_positions(
    conn: Connection,
    organization_id: uuid.UUID,
    pipeline_id: uuid.UUID,
    stages: Sequence[StageView],
    positions: dict[uuid.UUID, int],
) -> None:
    """Writes the positions that changed, in one UPDATE (a CASE over the ids), whatever their number."""
    changed = {s.id: positions[s.id] for s in stages if s.id in positions and positions[s.id] != s.position}
    if not changed:
        return
    conn.execute(
        update(pipeline_stages)
        .where(
            pipeline_stages.c.organization_id == organization_id,
            pipeline_stages.c.pipeline_id == pipeline_id,
            pipeline_stages.c.id.in_(list(changed)),
        )
        .values(position=case(changed, value=pipeline_stages.c.id), updated_at=sql_now())
    )


def _refuse_when_stage_holds_leads(
    conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID, stage_id: uuid.UUID
) -> None:
    """409 STAGE_HAS_LEADS with the count, primary placements (the lead row) and secondary ones together.

    The stage row is taken FOR UPDATE first: a move into the stage that is under way (its foreign-key
    check holds KEY SHARE on the row) commits before we count, and one that starts now waits for us.
    """
    conn.execute(
        select(pipeline_stages.c.id)
        .where(pipeline_stages.c.organization_id == organization_id, pipeline_stages.c.id == stage_id)
        .with_for_update()
    )
    # Archived leads count too: unarchiving one must not land it on an archived stage.
    primary = (
        select(func.count())
        .select_from(leads)
        .where(
            leads.c.organization_id == organization_id, leads.c.pipeline_id == pipeline_id, leads.c.stage_id == stage_id
        )
        .scalar_subquery()
    )
    secondary = (
        select(func.count())
        .select_from(lead_pipeline_placements)
        .where(
            lead_pipeline_placements.c.organization_id == organization_id,
            lead_pipeline_placements.c.pipeline_id == pipeline_id,
            lead_pipeline_placements.c.stage_id == stage_id,
        )
        .scalar_subquery()
    )
    counts = conn.execute(select(primary.label("primary"), secondary.label("secondary"))).one()
    total = counts.primary + counts.secondary
    if total:
        raise Conflict(
            f"{total} lead(s) are on this stage; move them to another stage first.",
            code="STAGE_HAS_LEADS",
            leadCount=total,
            primaryLeadCount=counts.primary,
            secondaryLeadCount=counts.secondary,
        )


def _stage_limit() -> BadRequest:
    return BadRequest(
        f"A pipeline has at most {MAX_STAGES_PER_PIPELINE} active stages.",
        code="PIPELINE_STAGE_LIMIT",
        limit=MAX_STAGES_PER_PIPELINE,
    )
