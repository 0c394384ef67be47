"""Helpers for the pipelines and stages API tests: paths, calls that must succeed, direct placements."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, insert, select

from leadcrm.leads.tables import lead_pipeline_placements
from leadcrm.pipelines.rules.statuses import DEFAULT_STAGES
from leadcrm.pipelines.tables import pipelines
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.factories import StaffCaller, make_caller

# A course funnel: no Converted stage, Customer is its win.
COURSE_FUNNEL = [
    {"name": "Enquiry", "category": "new"},
    {"name": "Called", "category": "contacted"},
    {"name": "Bought", "category": "customer"},
    {"name": "Dropped", "category": "lost"},
]


def pipelines_path(org_id: Any, pipeline_id: Any | None = None) -> str:
    base = f"/organizations/{org_id}/pipelines"
    return base if pipeline_id is None else f"{base}/{pipeline_id}"


def stages_path(org_id: Any, pipeline_id: Any, stage_id: Any | None = None) -> str:
    base = f"{pipelines_path(org_id, pipeline_id)}/stages"
    return base if stage_id is None else f"{base}/{stage_id}"


def ok(response: ApiResponse, status: int = 200) -> Any:
    assert response.status == status, response.body
    return response.data


def list_pipelines(caller: StaffCaller, **query: str) -> list[dict[str, Any]]:
    return ok(call_api("GET", pipelines_path(caller.org_id), sub=caller.sub, query=query or None))


def default_pipeline(caller: StaffCaller) -> dict[str, Any]:
    return next(p for p in list_pipelines(caller) if p["isDefault"])


def create_pipeline(caller: StaffCaller, name: str = "Courses", stages: list[dict] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if stages is not None:
        body["stages"] = stages
    return ok(call_api("POST", pipelines_path(caller.org_id), sub=caller.sub, body=body), 201)


def add_stage(caller: StaffCaller, pipeline_id: Any, name: str, category: str, **extra: Any) -> dict[str, Any]:
    body = {"name": name, "category": category, **extra}
    return ok(call_api("POST", stages_path(caller.org_id, pipeline_id), sub=caller.sub, body=body), 201)


def archive_stage(caller: StaffCaller, pipeline_id: Any, stage_id: Any) -> ApiResponse:
    return call_api("POST", f"{stages_path(caller.org_id, pipeline_id, stage_id)}/archive", sub=caller.sub)


def stage_of(pipeline: dict[str, Any], category: str) -> dict[str, Any]:
    return next(s for s in pipeline["stages"] if s["category"] == category)


def create_lead(caller: StaffCaller, name: str = "Ada Lovelace") -> dict[str, Any]:
    """A lead through the staff create route: it lands on the default pipeline's New stage."""
    return ok(call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": name}), 201)


def place_lead(organization_id: uuid.UUID, lead_id: Any, pipeline_id: Any, stage_id: Any) -> None:
    """A secondary placement written directly (the placements API belongs to another area)."""
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_pipeline_placements).values(
                id=uuid7(),
                organization_id=organization_id,
                lead_id=uuid.UUID(str(lead_id)),
                pipeline_id=uuid.UUID(str(pipeline_id)),
                stage_id=uuid.UUID(str(stage_id)),
            )
        )


# -- shared by the pipelines API tests ---------------------------------------------------------------------

DEFAULT_CATEGORIES = [c.value for c, _ in DEFAULT_STAGES]


def colleague(caller, role):
    return make_caller(role=role, organization=caller.organization)


def categories_of(pipeline) -> list[str]:
    return [s["category"] for s in pipeline["stages"]]


def names_of(pipeline) -> list[str]:
    return [s["name"] for s in pipeline["stages"]]


def get_pipeline(caller, pipeline_id, **query):
    return call_api("GET", pipelines_path(caller.org_id, pipeline_id), sub=caller.sub, query=query or None)


def default_pipeline_count(org_id) -> int:
    with get_engine().connect() as conn:
        return conn.execute(
            select(func.count())
            .select_from(pipelines)
            .where(pipelines.c.organization_id == org_id, pipelines.c.is_default)
        ).scalar_one()
