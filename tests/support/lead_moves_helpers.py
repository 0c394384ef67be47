"""Helpers for the lead-moves tests: leads on the default pipeline, extra pipelines, reading history back.

Pipelines and leads are written straight into the database where the test is not about how they are made
(the pipelines API is tested elsewhere), so these tests depend only on the routes they exercise.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update

from leadcrm.leads.tables import lead_activity_events, lead_pipeline_placements, lead_status_events, leads
from leadcrm.pipelines.rules.statuses import DEFAULT_STAGES
from leadcrm.pipelines.stages import ensure_default_pipeline
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.platform.tables import outbox
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.factories import StaffCaller


@dataclass(frozen=True)
class Pipeline:
    id: uuid.UUID
    stages: tuple[tuple[uuid.UUID, str], ...]  # (stage id, category) by position

    def stage(self, category: str, nth: int = 0) -> uuid.UUID:
        """The id of the nth stage of this category (by position)."""
        return [stage_id for stage_id, c in self.stages if c == category][nth]


def make_pipeline(org_id: uuid.UUID, categories: Sequence[str] | None = None, *, name: str = "Courses") -> Pipeline:
    """A pipeline with stages of these categories, in this order (default: one per category)."""
    categories = list(categories or [c.value for c, _ in DEFAULT_STAGES])
    pipeline_id = uuid7()
    stage_rows = [
        {
            "id": uuid7(),
            "organization_id": org_id,
            "pipeline_id": pipeline_id,
            "name": f"{category} {position}",
            "category": category,
            "position": position,
        }
        for position, category in enumerate(categories)
    ]
    with get_engine().begin() as conn:
        conn.execute(insert(pipelines).values(id=pipeline_id, organization_id=org_id, name=name))
        conn.execute(insert(pipeline_stages), stage_rows)
    return Pipeline(id=pipeline_id, stages=tuple((r["id"], r["category"]) for r in stage_rows))


def default_pipeline(org_id: uuid.UUID) -> Pipeline:
    with get_engine().begin() as conn:
        ensure_default_pipeline(conn, org_id)
        pipeline_id = conn.execute(
            select(pipelines.c.id).where(pipelines.c.organization_id == org_id, pipelines.c.is_default)
        ).scalar_one()
    return pipeline_of(pipeline_id)


def pipeline_of(pipeline_id: uuid.UUID) -> Pipeline:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(pipeline_stages.c.id, pipeline_stages.c.category)
            .where(pipeline_stages.c.pipeline_id == pipeline_id)
            .order_by(pipeline_stages.c.position)
        ).all()
    return Pipeline(id=pipeline_id, stages=tuple((r.id, r.category) for r in rows))


def add_stage(pipeline: Pipeline, org_id: uuid.UUID, category: str, *, archived: bool = False) -> Pipeline:
    """The pipeline with one more stage of `category` at the end."""
    stage_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(
            insert(pipeline_stages).values(
                id=stage_id,
                organization_id=org_id,
                pipeline_id=pipeline.id,
                name=f"extra {category}",
                category=category,
                position=len(pipeline.stages),
                archived_at=func.now() if archived else None,
            )
        )
    return Pipeline(id=pipeline.id, stages=(*pipeline.stages, (stage_id, category)))


def archive_stage(stage_id: uuid.UUID) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(pipeline_stages).where(pipeline_stages.c.id == stage_id).values(archived_at=func.now()))


def create_lead(caller: StaffCaller, name: str = "Ada Lovelace", **fields: Any) -> dict[str, Any]:
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": name, **fields})
    assert response.status == 201, response.body
    return response.data


def insert_leads(org_id: uuid.UUID, pipeline: Pipeline, count: int, *, category: str = "new") -> list[uuid.UUID]:
    """`count` leads on the first `category` stage of the pipeline, written in one statement."""
    stage_id = pipeline.stage(category)
    ids = [uuid7() for _ in range(count)]
    with get_engine().begin() as conn:
        conn.execute(
            insert(leads),
            [
                {
                    "id": lead_id,
                    "organization_id": org_id,
                    "name": f"Lead {i}",
                    "status": category,
                    "pipeline_id": pipeline.id,
                    "stage_id": stage_id,
                }
                for i, lead_id in enumerate(ids)
            ],
        )
    return ids


def patch_lead(caller: StaffCaller, lead_id: Any, body: Any) -> ApiResponse:
    return call_api("PATCH", leads_path(caller.org_id, lead_id), sub=caller.sub, body=body)


def lead_row(lead_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(leads).where(leads.c.id == uuid.UUID(str(lead_id)))).mappings().one())


def set_lead_columns(lead_id: Any, **values: Any) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(leads).where(leads.c.id == uuid.UUID(str(lead_id))).values(**values))


def make_converted(lead_id: Any, stage_id: uuid.UUID) -> None:
    """What convert (a later issue) leaves behind: the lead on a converted stage."""
    set_lead_columns(lead_id, stage_id=stage_id, status="converted")


def status_events(lead_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_status_events)
            .where(lead_status_events.c.lead_id == uuid.UUID(str(lead_id)))
            .order_by(lead_status_events.c.changed_at, lead_status_events.c.id)
        ).mappings()
        return [dict(r) for r in rows]


def activities(lead_id: Any, activity_type: str | None = None) -> list[dict[str, Any]]:
    query = select(lead_activity_events).where(lead_activity_events.c.lead_id == uuid.UUID(str(lead_id)))
    if activity_type:
        query = query.where(lead_activity_events.c.type == activity_type)
    with get_engine().connect() as conn:
        rows = conn.execute(query.order_by(lead_activity_events.c.occurred_at, lead_activity_events.c.id)).mappings()
        return [dict(r) for r in rows]


def outbox_events(lead_id: Any, event_type: str = "lead.status_changed") -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(outbox)
            .where(outbox.c.aggregate_id == uuid.UUID(str(lead_id)), outbox.c.type == event_type)
            .order_by(outbox.c.occurred_at)
        ).mappings()
        return [dict(r) for r in rows]


def placements(lead_id: Any) -> dict[uuid.UUID, uuid.UUID]:
    """The lead's secondary placements: pipeline id → stage id."""
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_pipeline_placements.c.pipeline_id, lead_pipeline_placements.c.stage_id).where(
                lead_pipeline_placements.c.lead_id == uuid.UUID(str(lead_id))
            )
        ).all()
    return {r.pipeline_id: r.stage_id for r in rows}


def set_placement_stage(lead_id: Any, pipeline_id: uuid.UUID, stage_id: uuid.UUID) -> None:
    with get_engine().begin() as conn:
        conn.execute(
            update(lead_pipeline_placements)
            .where(
                lead_pipeline_placements.c.lead_id == uuid.UUID(str(lead_id)),
                lead_pipeline_placements.c.pipeline_id == pipeline_id,
            )
            .values(stage_id=stage_id)
        )
