"""Pipelines' reads: the organization's pipelines with their stages (the default first, then in creation order),
one pipeline by id. Two statements whatever the number of pipelines; the route's list is one, with the caller's
membership check in it (`list_pipelines_as_member`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, and_, select

from leadcrm.directory.member_reads import Gate, data_column, member_statement, read_as_member
from leadcrm.directory.rules import Actor
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.stages import ensure_default_pipeline, pipeline_not_found
from leadcrm.pipelines.tables import pipeline_stages, pipelines


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


def list_pipelines_as_member(
    conn: Connection, auth_subject: str, organization_id: uuid.UUID, gate: Gate, *, include_archived: bool
) -> tuple[Actor, list[PipelineView]]:
    """The caller (refused as resolve_actor and `gate` refuse) and `list_pipelines`' answer, in one statement:
    the pipelines joined to their stages. The read that finds no default pipeline seeds it as list_pipelines
    does, and reads again."""
    read = read_as_member(
        conn,
        member_statement(_pipelines_with_stages(organization_id, include_archived), order_by=_PIPELINE_ORDER),
        auth_subject=auth_subject,
        organization_id=organization_id,
        gate=gate,
    )
    if not any(row["is_default"] for row in read.rows):
        return read.actor, list_pipelines(conn, organization_id, include_archived=include_archived)
    views: dict[uuid.UUID, tuple[dict[str, Any], list[StageView]]] = {}
    for row in read.rows:
        _, stages = views.setdefault(row["id"], (row, []))
        if row["stage_id"] is not None:
            stages.append(_stage_view_of(row))
    return read.actor, [_pipeline_view_of(row, stages) for row, stages in views.values()]


def _pipelines_with_stages(organization_id: uuid.UUID, include_archived: bool) -> Select:
    """One row per (pipeline, stage), and one with null stage columns for a pipeline without stages."""
    stage_on = and_(
        pipeline_stages.c.organization_id == organization_id, pipeline_stages.c.pipeline_id == pipelines.c.id
    )
    query = select(
        *PIPELINE_COLUMNS,
        pipeline_stages.c.id.label("stage_id"),
        pipeline_stages.c.name.label("stage_name"),
        pipeline_stages.c.category.label("stage_category"),
        pipeline_stages.c.position.label("stage_position"),
        pipeline_stages.c.archived_at.label("stage_archived_at"),
    ).where(pipelines.c.organization_id == organization_id)
    if not include_archived:
        stage_on = and_(stage_on, pipeline_stages.c.archived_at.is_(None))
        query = query.where(pipelines.c.archived_at.is_(None))
    return query.select_from(pipelines.outerjoin(pipeline_stages, stage_on))


# list_pipelines' order (default first, then oldest first), each pipeline's stages by position.
_PIPELINE_ORDER = (
    data_column("is_default").desc(),
    *(data_column(name) for name in ("created_at", "id", "stage_position", "stage_id")),
)


def _stage_view_of(row: dict[str, Any]) -> StageView:
    return StageView(
        id=row["stage_id"],
        name=row["stage_name"],
        category=StageCategory(row["stage_category"]),
        position=row["stage_position"],
        archived_at=row["stage_archived_at"],
    )


def _pipeline_view_of(row: dict[str, Any], stages: Sequence[StageView]) -> PipelineView:
    return PipelineView(
        id=row["id"],
        name=row["name"],
        is_default=row["is_default"],
        archived_at=row["archived_at"],
        created_at=row["created_at"],
        stages=tuple(stages),
    )


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
