"""The SQL round trips each main route may send (issue 22), shared by the test that holds them
(tests/integration/platform/test_round_trips.py) and `make bench` (bench/statements.py), which prints each
route's count beside its budget.

A count is every statement the request sends through the product's engine, through `lambda_handler` with an
API Gateway HTTP API event: the membership check, the writes, and publishing the events after commit.
The routes the issue names carry its targets; the others carry what they cost when the budgets were set, so
that none gets slower unnoticed. Lower a budget when a route gets cheaper.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from tests.support.events import http_api_event


@dataclass(frozen=True)
class RouteBudget:
    name: str
    method: str
    path: str  # under /organizations/{orgId}; {leadId} is a lead made for the call (new, untouched)
    body: dict[str, Any] | None = None
    query: dict[str, str] | None = None
    budget: int = 0
    status: int = 200
    public: bool = False  # a path of its own (public capture), called without a token


ROUTES: tuple[RouteBudget, ...] = (
    RouteBudget(
        "staff create",
        "POST",
        "/leads",
        {"name": "Ada Lovelace", "email": "{unique}@example.com"},
        budget=4,
        status=201,
    ),
    RouteBudget(
        "public capture",
        "POST",
        "/leads/organization/{orgId}",
        {"name": "Web Lead", "email": "{unique}@example.com"},
        budget=4,
        status=201,
        public=True,
    ),
    RouteBudget("GET lead", "GET", "/leads/{leadId}", budget=2),
    RouteBudget("list page", "GET", "/leads", budget=1),
    RouteBudget("search page", "GET", "/leads", query={"search": "ada"}, budget=1),
    RouteBudget("stage move", "PATCH", "/leads/{leadId}", {"status": "contacted"}, budget=3),
    RouteBudget(
        "touch with outcome",
        "POST",
        "/leads/{leadId}/touches",
        {"channel": "call", "outcome": "callback_requested"},
        budget=5,
    ),
    RouteBudget(
        "touch, no answer", "POST", "/leads/{leadId}/touches", {"channel": "call", "outcome": "no_answer"}, budget=4
    ),
    RouteBudget(
        "schedule follow-up",
        "PUT",
        "/leads/{leadId}/follow-up",
        {"at": "2030-01-01T10:00:00Z", "type": "call"},
        budget=4,
    ),
    RouteBudget("work queue", "GET", "/leads/queue", budget=3),
    RouteBudget(
        "sales stage write",
        "PUT",
        "/sales-workspace/leads/{leadId}/stage",
        {"version": 1, "stageId": "{contactedStageId}"},
        budget=3,  # as the PATCH move: the version is checked on the row the move locks
    ),
    RouteBudget(
        "sales result",
        "POST",
        "/sales-workspace/leads/{leadId}/results",
        {"version": 1, "outcome": "callback_requested", "followUp": {"at": "2030-01-01T10:00:00Z"}},
        budget=7,  # a touch with outcome (5), the version check under the lead's lock, the replaced intake task
    ),
    RouteBudget("sales access", "GET", "/sales-workspace/access/me", budget=1),  # the membership read only
    RouteBudget("urgent prompt", "GET", "/urgent-prompt", budget=3),
    RouteBudget("task list", "GET", "/tasks", budget=1),
    RouteBudget("create task", "POST", "/tasks", {"title": "Call back"}, budget=3, status=201),
    RouteBudget("pipelines", "GET", "/pipelines", budget=1),
)


def route_event(route: RouteBudget, organization_id: uuid.UUID | str, subject: str, lead_id: str) -> dict[str, Any]:
    """The API Gateway event of one call of `route` by `subject` in the organization, on the lead `lead_id`."""
    values = {"orgId": str(organization_id), "leadId": lead_id, "unique": uuid.uuid4().hex[:12]}
    if "{contactedStageId}" in json.dumps(route.body):
        values["contactedStageId"] = _stage_of(lead_id, "contacted")
    path = _fill(route.path, values)
    body = _fill(route.body, values)
    if route.public:
        return http_api_event(route.method, path, sub=None, body=body, query=route.query, authorizer=False)
    return http_api_event(
        route.method, f"/organizations/{organization_id}{path}", sub=subject, body=body, query=route.query
    )


def _stage_of(lead_id: str, category: str) -> str:
    """The first active stage of `category` in the lead's primary pipeline (read before the call is counted)."""
    from sqlalchemy import select

    from leadcrm.leads.tables import leads
    from leadcrm.pipelines.tables import pipeline_stages
    from leadcrm.platform.db.engine import get_engine

    with get_engine().connect() as conn:
        return str(
            conn.execute(
                select(pipeline_stages.c.id)
                .select_from(leads.join(pipeline_stages, pipeline_stages.c.pipeline_id == leads.c.pipeline_id))
                .where(
                    leads.c.id == uuid.UUID(lead_id),
                    pipeline_stages.c.category == category,
                    pipeline_stages.c.archived_at.is_(None),
                )
                .order_by(pipeline_stages.c.position)
                .limit(1)
            ).scalar_one()
        )


def _fill(value: Any, values: dict[str, str]) -> Any:
    if value is None:
        return None
    text = json.dumps(value)
    for key, replacement in values.items():
        text = text.replace("{" + key + "}", replacement)
    return json.loads(text)
