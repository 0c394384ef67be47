"""Pipelines and their stages."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.db.tables import pipeline_stages, pipelines
from leadcrm.domain.statuses import DEFAULT_PIPELINE_NAME, DEFAULT_STAGES, StageCategory
from leadcrm.errors import Conflict
from leadcrm.ids import uuid7


@dataclass(frozen=True)
class StagePlacement:
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    category: StageCategory


def default_new_stage(conn: Connection, organization_id: uuid.UUID) -> StagePlacement:
    """Where a new lead lands: the first active `new` stage of the default pipeline, seeded on first use.

    Seeding is race-safe: the partial unique index allows one default pipeline per organization, so of two
    concurrent first requests one inserts and the other waits, conflicts and reads the winner's stages.
    """
    found = _first_new_stage_of_default(conn, organization_id)
    if found:
        return found
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
    found = _first_new_stage_of_default(conn, organization_id)
    if found is None:
        raise Conflict("The default pipeline has no active New stage.", code="PIPELINE_HAS_NO_NEW_STAGE")
    return found


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
