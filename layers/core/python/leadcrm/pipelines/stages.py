"""Pipelines and their stages: the lazily seeded default pipeline, stage lookups, and reads.

The stage lookups other areas call (`resolve_stage`, `first_active_stage`) take the stage row FOR KEY SHARE,
like a lead write's foreign-key check, so they queue behind a stage edit under way and hold later ones off
(see `pipelines.editing`, where the staff edits live).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Row, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.pipelines.rules.statuses import DEFAULT_PIPELINE_NAME, DEFAULT_STAGES, StageCategory
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from leadcrm.platform.errors import Conflict, NotFound
from leadcrm.platform.ids import uuid7

# -- what other areas call -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageRow:
    id: uuid.UUID
    pipeline_id: uuid.UUID
    category: StageCategory
    position: int
    archived_at: datetime | None


_STAGE_ROW_COLUMNS = (
    pipeline_stages.c.id,
    pipeline_stages.c.pipeline_id,
    pipeline_stages.c.category,
    pipeline_stages.c.position,
    pipeline_stages.c.archived_at,
)


def _stage_row(row: Row) -> StageRow:
    return StageRow(
        id=row.id,
        pipeline_id=row.pipeline_id,
        category=StageCategory(row.category),
        position=row.position,
        archived_at=row.archived_at,
    )


def resolve_stage(conn: Connection, organization_id: uuid.UUID, stage_id: uuid.UUID) -> StageRow:
    """The stage with this id in this organization, archived or not (the caller decides what archived means
    for it); another organization's id is NotFound exactly like a random one.

    The row is taken FOR KEY SHARE (it does not block other readers or movers): a concurrent archive or
    category change of the stage waits for the caller's transaction, and the caller waits for one already
    under way and then reads the stage as it left it.
    """
    row = conn.execute(
        select(*_STAGE_ROW_COLUMNS)
        .where(pipeline_stages.c.organization_id == organization_id, pipeline_stages.c.id == stage_id)
        .with_for_update(read=True, key_share=True)
    ).first()
    if row is None:
        raise NotFound("Stage not found.", code="STAGE_NOT_FOUND")
    return _stage_row(row)


def first_active_stage(
    conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID, category: StageCategory
) -> StageRow | None:
    """The active stage of this category with the lowest position in the pipeline, if any; taken FOR KEY
    SHARE like `resolve_stage`, for the same reason."""
    row = conn.execute(
        select(*_STAGE_ROW_COLUMNS)
        .where(
            pipeline_stages.c.organization_id == organization_id,
            pipeline_stages.c.pipeline_id == pipeline_id,
            pipeline_stages.c.category == StageCategory(category).value,
            pipeline_stages.c.archived_at.is_(None),
        )
        .order_by(pipeline_stages.c.position, pipeline_stages.c.id)
        .limit(1)
        .with_for_update(read=True, key_share=True)
    ).first()
    return None if row is None else _stage_row(row)


@dataclass(frozen=True)
class StagePlacement:
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    category: StageCategory


def default_new_stage(conn: Connection, organization_id: uuid.UUID) -> StagePlacement:
    """Where a new lead lands: the first active `new` stage of the default pipeline, seeded on first use."""
    found = _first_new_stage_of_default(conn, organization_id)
    if found:
        return found
    ensure_default_pipeline(conn, organization_id)
    found = _first_new_stage_of_default(conn, organization_id)
    if found is None:
        raise Conflict("The default pipeline has no active New stage.", code="PIPELINE_HAS_NO_NEW_STAGE")
    return found


def ensure_default_pipeline(conn: Connection, organization_id: uuid.UUID) -> None:
    """Seeds the organization's default pipeline (one stage per category) unless it has one.

    Race-safe: the partial unique index allows one default pipeline per organization, so of two concurrent
    first requests one inserts and the other waits on the index, conflicts, inserts nothing, and then reads
    the winner's committed rows (READ COMMITTED: each later statement sees them).
    """
    pipeline_id = uuid7()
    created = conn.execute(
        pg_insert(pipelines)
        .values(id=pipeline_id, organization_id=organization_id, name=DEFAULT_PIPELINE_NAME, is_default=True)
        .on_conflict_do_nothing(index_elements=["organization_id"], index_where=pipelines.c.is_default)
        .returning(pipelines.c.id)
    ).first()
    if created:
        conn.execute(
            insert(pipeline_stages),
            [
                {
                    "id": uuid7(),
                    "organization_id": organization_id,
                    "pipeline_id": pipeline_id,
                    "name": name,
                    "category": category.value,
                    "position": position,
                }
                for position, (category, name) in enumerate(DEFAULT_STAGES)
            ],
        )


def _first_new_stage_of_default(conn: Connection, organization_id: uuid.UUID) -> StagePlacement | None:
    row = conn.execute(
        select(pipeline_stages.c.pipeline_id, pipeline_stages.c.id, pipeline_stages.c.category)
        .join(pipelines, pipelines.c.id == pipeline_stages.c.pipeline_id)
        .where(
            pipelines.c.organization_id == organization_id,
            pipelines.c.is_default,
            pipeline_stages.c.category == StageCategory.NEW.value,
            pipeline_stages.c.archived_at.is_(None),
        )
        .order_by(pipeline_stages.c.position)
        .limit(1)
    ).first()
    if row is None:
        return None
    return StagePlacement(pipeline_id=row.pipeline_id, stage_id=row.id, category=StageCategory(row.category))


# -- reads -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageView:
    id: uuid.UUID
    name: str
    category: StageCategory
    position: int
    archived_at: datetime | None


@dataclass(frozen=True)
class PipelineView:
    id: uuid.UUID
    name: str
    is_default: bool
    archived_at: datetime | None
    created_at: datetime
    stages: tuple[StageView, ...]


PIPELINE_COLUMNS = (
    pipelines.c.id,
    pipelines.c.name,
    pipelines.c.is_default,
    pipelines.c.archived_at,
    pipelines.c.created_at,
)
_STAGE_VIEW_COLUMNS = (
    pipeline_stages.c.id,
    pipeline_stages.c.pipeline_id,
    pipeline_stages.c.name,
    pipeline_stages.c.category,
    pipeline_stages.c.position,
    pipeline_stages.c.archived_at,
)


def list_pipelines(conn: Connection, organization_id: uuid.UUID, *, include_archived: bool) -> list[PipelineView]:
    """The organization's pipelines, default first then oldest first, each with its stages by position.

    Two statements whatever the number of pipelines (pipelines, then all their stages); the default
    pipeline is seeded on the first read that finds none, so a new organization always sees it.
    """
    rows = _read_pipelines(conn, organization_id, include_archived=include_archived)
    if not any(row.is_default for row in rows):  # the default is never archived, so it is listed when it exists
        ensure_default_pipeline(conn, organization_id)
        rows = _read_pipelines(conn, organization_id, include_archived=include_archived)
    stages = read_stages(conn, organization_id, [row.id for row in rows], include_archived=include_archived)
    return [pipeline_view(row, stages.get(row.id, [])) for row in rows]


def get_pipeline(
    conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID, *, include_archived_stages: bool
) -> PipelineView:
    """One pipeline (archived or not: its id was asked for) with its stages; PIPELINE_NOT_FOUND otherwise."""
    row = conn.execute(
        select(*PIPELINE_COLUMNS).where(pipelines.c.organization_id == organization_id, pipelines.c.id == pipeline_id)
    ).first()
    if row is None:
        raise pipeline_not_found()
    stages = read_stages(conn, organization_id, [row.id], include_archived=include_archived_stages)
    return pipeline_view(row, stages.get(row.id, []))


def _read_pipelines(conn: Connection, organization_id: uuid.UUID, *, include_archived: bool) -> list[Row]:
    query = select(*PIPELINE_COLUMNS).where(pipelines.c.organization_id == organization_id)
    if not include_archived:
        query = query.where(pipelines.c.archived_at.is_(None))
    return list(conn.execute(query.order_by(pipelines.c.is_default.desc(), pipelines.c.created_at, pipelines.c.id)))


def read_stages(
    conn: Connection, organization_id: uuid.UUID, pipeline_ids: Sequence[uuid.UUID], *, include_archived: bool
) -> dict[uuid.UUID, list[StageView]]:
    if not pipeline_ids:
        return {}
    query = select(*_STAGE_VIEW_COLUMNS).where(
        pipeline_stages.c.organization_id == organization_id, pipeline_stages.c.pipeline_id.in_(pipeline_ids)
    )
    if not include_archived:
        query = query.where(pipeline_stages.c.archived_at.is_(None))
    by_pipeline: dict[uuid.UUID, list[StageView]] = {}
    for row in conn.execute(query.order_by(pipeline_stages.c.position, pipeline_stages.c.id)):
        by_pipeline.setdefault(row.pipeline_id, []).append(_stage_view(row))
    return by_pipeline


def _stage_view(row: Row) -> StageView:
    return StageView(
        id=row.id,
        name=row.name,
        category=StageCategory(row.category),
        position=row.position,
        archived_at=row.archived_at,
    )


def pipeline_view(row: Row, stages: Sequence[StageView]) -> PipelineView:
    return PipelineView(
        id=row.id,
        name=row.name,
        is_default=row.is_default,
        archived_at=row.archived_at,
        created_at=row.created_at,
        stages=tuple(stages),
    )


def pipeline_not_found() -> NotFound:
    return NotFound("Pipeline not found.", code="PIPELINE_NOT_FOUND")
