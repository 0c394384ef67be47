"""Pipelines and their stages: the lazily seeded default pipeline, stage lookups, and reads.

The stage lookups other areas call (`resolve_stage`, `first_active_stage`) take the stage row FOR KEY SHARE,
like a lead write's foreign-key check, so they queue behind a stage edit under way and hold later ones off
(see `pipelines.editing`, where the staff edits live).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, insert, select
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


def stage_lookup(organization_id: uuid.UUID, stage_id: uuid.UUID) -> Select[Any]:
    """`resolve_stage` as a query another statement may carry (a LATERAL join), FOR KEY SHARE as well."""
    return (
        select(*_STAGE_ROW_COLUMNS)
        .where(pipeline_stages.c.organization_id == organization_id, pipeline_stages.c.id == stage_id)
        .with_for_update(read=True, key_share=True)
    )


def first_active_stage_lookup(organization_id: uuid.UUID, pipeline_id: Any, category: StageCategory) -> Select[Any]:
    """`first_active_stage` as a query another statement may carry (`pipeline_id` may be a column of it)."""
    return (
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
    )


STAGE_ROW_NAMES = tuple(c.name for c in _STAGE_ROW_COLUMNS)


def stage_row_of(values: Mapping[str, Any], prefix: str) -> StageRow | None:
    """The StageRow of a lookup's columns another statement read as `<prefix><name>` (None: it found none)."""
    if values[prefix + "id"] is None:
        return None
    return StageRow(
        id=values[prefix + "id"],
        pipeline_id=values[prefix + "pipeline_id"],
        category=StageCategory(values[prefix + "category"]),
        position=values[prefix + "position"],
        archived_at=values[prefix + "archived_at"],
    )


def stage_not_found() -> NotFound:
    return NotFound("Stage not found.", code="STAGE_NOT_FOUND")


def resolve_stage(conn: Connection, organization_id: uuid.UUID, stage_id: uuid.UUID) -> StageRow:
    """The stage with this id in this organization, archived or not (the caller decides what archived means
    for it); another organization's id is NotFound exactly like a random one.

    The row is taken FOR KEY SHARE (it does not block other readers or movers): a concurrent archive or
    category change of the stage waits for the caller's transaction, and the caller waits for one already
    under way and then reads the stage as it left it.
    """
    row = conn.execute(stage_lookup(organization_id, stage_id)).first()
    if row is None:
        raise stage_not_found()
    return _stage_row(row)


def first_active_stage(
    conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID, category: StageCategory
) -> StageRow | None:
    """The active stage of this category with the lowest position in the pipeline, if any; taken FOR KEY
    SHARE like `resolve_stage`, for the same reason."""
    row = conn.execute(first_active_stage_lookup(organization_id, pipeline_id, category)).first()
    return None if row is None else _stage_row(row)


@dataclass(frozen=True)
class StagePlacement:
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    category: StageCategory


def default_new_stage(
    conn: Connection, organization_id: uuid.UUID, *, known: StagePlacement | None = None
) -> StagePlacement:
    """Where a new lead lands: the first active `new` stage of the default pipeline, seeded on first use.
    `known`: what an earlier statement of the unit read with `first_new_stage_of_default` (no read then)."""
    found = known or _first_new_stage_of_default(conn, organization_id)
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


def first_new_stage_of_default(organization_id: uuid.UUID) -> Select[Any]:
    """Where a new lead lands, as a query (pipeline_id, id, category) another statement may carry (a LATERAL
    join): the first active New stage of the default pipeline; no row before the pipeline is seeded."""
    return (
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
    )


def placement_of(
    pipeline_id: uuid.UUID | None, stage_id: uuid.UUID | None, category: str | None
) -> StagePlacement | None:
    if pipeline_id is None or stage_id is None or category is None:
        return None
    return StagePlacement(pipeline_id=pipeline_id, stage_id=stage_id, category=StageCategory(category))


def _first_new_stage_of_default(conn: Connection, organization_id: uuid.UUID) -> StagePlacement | None:
    row = conn.execute(first_new_stage_of_default(organization_id)).first()
    return placement_of(row.pipeline_id, row.id, row.category) if row else None


# -- reads -----------------------------------------------------------------------------------------------


def pipeline_not_found() -> NotFound:
    return NotFound("Pipeline not found.", code="PIPELINE_NOT_FOUND")
