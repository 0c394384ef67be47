"""What the bench measures on the big organization: list shapes, the detail GET, and a bulk stage move."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection, text

from bench.measure import Latency, time_calls
from leadcrm.directory.access import resolve_actor
from leadcrm.directory.rules import Actor
from leadcrm.leads.queries import build_list_query, get_lead, list_leads
from leadcrm.leads.rules.listing import (
    ArchivedFilter,
    LeadListFilters,
    LeadSort,
    SortOrder,
    decode_cursor,
    parse_search,
)
from leadcrm.platform.assignee import Assignee
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import UnitOfWork
from tests.support.lead_list_helpers import explain, indexes_used_on, seq_scans_on

# A scenario pages forward through the list like a user scrolling, then starts over.
PAGES_BEFORE_RESTART = 10
OWNER_SUBJECT = "bench|0|0"
COACH_SUBJECT = "bench|0|2"  # a coach of the big organization: `assignee=me` lists their leads


@dataclass(frozen=True)
class BigOrg:
    """Ids of the big organization the shapes filter on."""

    id: uuid.UUID
    owner: Actor
    coach: Actor
    sales_pipeline_id: uuid.UUID
    courses_pipeline_id: uuid.UUID
    stage_ids: dict[str, uuid.UUID]  # Sales stages by category
    popular_tag_id: uuid.UUID
    rare_tag_ids: list[uuid.UUID]
    campaign_id: uuid.UUID
    name_terms: list[str]
    email_terms: list[str]
    phone_terms: list[str]
    lead_ids: list[uuid.UUID] = field(repr=False)


def load_big_org(organization_id: uuid.UUID) -> BigOrg:
    with get_engine().connect() as conn:
        owner = resolve_actor(conn, OWNER_SUBJECT, organization_id)
        coach = resolve_actor(conn, COACH_SUBJECT, organization_id)
        pipelines = dict(
            conn.execute(
                text("SELECT name, id FROM pipelines WHERE organization_id = :o"), {"o": organization_id}
            ).all()
        )
        stages = dict(
            conn.execute(
                text("SELECT category, id FROM pipeline_stages WHERE organization_id = :o AND pipeline_id = :p"),
                {"o": organization_id, "p": pipelines["Sales"]},
            ).all()
        )
        tags_by_use = [
            row[0]
            for row in conn.execute(
                text(
                    "SELECT tag_id FROM lead_tag_assignments WHERE organization_id = :o "
                    "GROUP BY tag_id ORDER BY count(*) DESC"
                ),
                {"o": organization_id},
            )
        ]
        campaign_id = conn.execute(
            text("SELECT id FROM lead_campaigns WHERE organization_id = :o ORDER BY name LIMIT 1"),
            {"o": organization_id},
        ).scalar_one()
        sample = conn.execute(
            text(
                "SELECT id, name, email, phone_digits FROM leads WHERE organization_id = :o "
                "ORDER BY md5(id::text) LIMIT 400"
            ),
            {"o": organization_id},
        ).all()
    names = sorted({row.name.split()[0].lower() for row in sample if row.name})
    emails = [row.email.split("@")[0][-7:] for row in sample if row.email][:60]
    phones = [row.phone_digits[-7:-1] for row in sample if row.phone_digits][:60]
    return BigOrg(
        id=organization_id,
        owner=owner,
        coach=coach,
        sales_pipeline_id=pipelines["Sales"],
        courses_pipeline_id=pipelines["Courses"],
        stage_ids=stages,
        popular_tag_id=tags_by_use[0],
        rare_tag_ids=tags_by_use[-2:],
        campaign_id=campaign_id,
        name_terms=names,
        email_terms=emails,
        phone_terms=phones,
        lead_ids=[row.id for row in sample],
    )


@dataclass(frozen=True)
class ListShape:
    name: str
    filters: LeadListFilters
    actor: Actor
    # Search shapes vary the term per request, so no two consecutive requests are the same query.
    terms: list[str] = field(default_factory=list)
    query: dict[str, str] = field(default_factory=dict)  # the same request as API query parameters

    def filters_for(self, request: int) -> LeadListFilters:
        if not self.terms:
            return self.filters
        return replace(self.filters, search=parse_search(self.terms[request % len(self.terms)]))


def list_shapes(org: BigOrg) -> list[ListShape]:
    owner, coach = org.owner, org.coach
    stages = org.stage_ids
    return [
        ListShape("default (createdAt desc)", LeadListFilters(), owner),
        ListShape("createdAt asc", LeadListFilters(order=SortOrder.ASC), owner, query={"order": "asc"}),
        ListShape("sort updatedAt", LeadListFilters(sort=LeadSort.UPDATED_AT), owner, query={"sort": "updatedAt"}),
        ListShape(
            "sort statusChangedAt",
            LeadListFilters(sort=LeadSort.STATUS_CHANGED_AT),
            owner,
            query={"sort": "statusChangedAt"},
        ),
        ListShape("status=contacted", LeadListFilters(statuses=("contacted",)), owner, query={"status": "contacted"}),
        ListShape(
            "status=trial_booked,no_show",
            LeadListFilters(statuses=("trial_booked", "no_show")),
            owner,
            query={"status": "trial_booked,no_show"},
        ),
        ListShape(
            "pipelineId=Courses (primary or secondary)",
            LeadListFilters(pipeline_id=org.courses_pipeline_id),
            owner,
            query={"pipelineId": str(org.courses_pipeline_id)},
        ),
        ListShape(
            "pipelineId=Sales&stageIds=callback,trial",
            LeadListFilters(pipeline_id=org.sales_pipeline_id, stage_ids=(stages["callback"], stages["trial_booked"])),
            owner,
            query={
                "pipelineId": str(org.sales_pipeline_id),
                "stageIds": f"{stages['callback']},{stages['trial_booked']}",
            },
        ),
        ListShape(
            "pipelineId=Sales (the default pipeline)",
            LeadListFilters(pipeline_id=org.sales_pipeline_id),
            owner,
            query={"pipelineId": str(org.sales_pipeline_id)},
        ),
        ListShape(
            "stageIds=contacted (primary stage)",
            LeadListFilters(stage_ids=(stages["contacted"],)),
            owner,
            query={"stageIds": str(stages["contacted"])},
        ),
        ListShape(
            "tags=popular tag",
            LeadListFilters(tag_ids=(org.popular_tag_id,)),
            owner,
            query={"tags": str(org.popular_tag_id)},
        ),
        ListShape(
            "tags=two rare tags (ANY)",
            LeadListFilters(tag_ids=tuple(org.rare_tag_ids)),
            owner,
            query={"tags": ",".join(map(str, org.rare_tag_ids))},
        ),
        ListShape(
            "campaignId",
            LeadListFilters(campaign_id=org.campaign_id),
            owner,
            query={"campaignId": str(org.campaign_id)},
        ),
        ListShape("assignee=me", LeadListFilters(assignee=Assignee(coach.user_id)), coach, query={"assignee": "me"}),
        ListShape(
            "assignee=me&status=contacted&sort=updatedAt",
            LeadListFilters(assignee=Assignee(coach.user_id), statuses=("contacted",), sort=LeadSort.UPDATED_AT),
            coach,
            query={"assignee": "me", "status": "contacted", "sort": "updatedAt"},
        ),
        ListShape(
            "archived=true",
            LeadListFilters(archived=ArchivedFilter.ARCHIVED),
            owner,
            query={"archived": "true"},
        ),
        ListShape("search=first name", LeadListFilters(), owner, terms=org.name_terms),
        ListShape("search=email fragment", LeadListFilters(), owner, terms=org.email_terms),
        ListShape("search=phone digits", LeadListFilters(), owner, terms=org.phone_terms),
        ListShape("search=no match", LeadListFilters(), owner, terms=[f"zq{n}x" for n in range(50)]),
        # Two characters hold no trigram: the worst case is a rare pair, found by reading the whole org.
        ListShape("search=2 rare characters", LeadListFilters(), owner, terms=["qz", "zx", "xq", "jq", "qj"]),
    ]


def _pager(shape: ListShape, run_page: Callable[[ListShape, LeadListFilters], str | None]) -> Callable[[int], None]:
    """A callable that fetches the next page each time, restarting after PAGES_BEFORE_RESTART pages."""
    state: dict[str, Any] = {"cursor": None, "pages": 0}

    def call(request: int) -> None:
        filters = shape.filters_for(request if state["cursor"] is None else state["term_request"])
        if state["cursor"] is None:
            state["term_request"] = request
        else:
            filters = replace(filters, after=decode_cursor(state["cursor"], filters.sort, filters.order))
        next_cursor = run_page(shape, filters)
        state["pages"] += 1
        if next_cursor is None or state["pages"] >= PAGES_BEFORE_RESTART:
            state["cursor"], state["pages"] = None, 0
        else:
            state["cursor"] = next_cursor

    return call


def _service_page(shape: ListShape, filters: LeadListFilters) -> str | None:
    with UnitOfWork() as uow:
        return list_leads(uow.connection, shape.actor, filters).next_cursor


def measure_list_shape(shape: ListShape, *, requests: int, warmup: int) -> Latency:
    return time_calls(_pager(shape, _service_page), requests=requests, warmup=warmup)


BASELINE_NAME = "bare SELECT … ORDER BY id DESC LIMIT 50"


def baseline_call(organization_id: uuid.UUID) -> Callable[[int], None]:
    """A bare first page by the (organization_id, id) index: what any list costs at the least here."""
    statement = text("SELECT * FROM leads WHERE organization_id = :o ORDER BY id DESC LIMIT 50")

    def call(_: int) -> None:
        with UnitOfWork() as uow:
            uow.connection.execute(statement, {"o": organization_id}).all()

    return call


def measure_baseline(org: BigOrg, *, requests: int, warmup: int) -> Latency:
    return time_calls(baseline_call(org.id), requests=requests, warmup=warmup)


def plan_summary(conn: Connection, shape: ListShape) -> dict[str, Any]:
    plan = explain(conn, build_list_query(shape.actor, shape.filters_for(0)))
    return {
        "indexes": sorted(set(indexes_used_on(plan, "leads"))),
        "seqScanOnLeads": bool(seq_scans_on(plan, "leads")),
    }


# -- detail -------------------------------------------------------------------------------------------------


def measure_detail(org: BigOrg, *, requests: int, warmup: int) -> Latency:
    """GET one lead (pipelines, tags, timeline) for leads with short and with long histories."""
    rich = _rich_history_leads(org)
    targets = [lead_id for pair in zip(rich, org.lead_ids, strict=False) for lead_id in pair]

    def call(i: int) -> None:
        with UnitOfWork() as uow:
            get_lead(uow.connection, org.id, targets[i % len(targets)])

    return time_calls(call, requests=requests, warmup=warmup)


def _rich_history_leads(org: BigOrg) -> list[uuid.UUID]:
    with get_engine().connect() as conn:
        return [
            row[0]
            for row in conn.execute(
                text(
                    "SELECT lead_id FROM lead_activity_events WHERE organization_id = :o "
                    "GROUP BY lead_id HAVING count(*) > 100 LIMIT 200"
                ),
                {"o": org.id},
            )
        ]


# -- through the Lambda handler ----------------------------------------------------------------------------


def measure_handler_list(org: BigOrg, shape: ListShape, *, requests: int, warmup: int) -> Latency:
    """The same pages through api.handler.lambda_handler with API Gateway HTTP API events."""
    from api.handler import lambda_handler
    from tests.support.events import http_api_event, lambda_context

    context = lambda_context("leadcrm-api")
    subject = OWNER_SUBJECT if shape.actor == org.owner else COACH_SUBJECT
    state: dict[str, Any] = {"cursor": None, "pages": 0}

    def call(_: int) -> None:
        query = dict(shape.query)
        if state["cursor"]:
            query["cursor"] = state["cursor"]
        response = lambda_handler(
            http_api_event("GET", f"/organizations/{org.id}/leads", sub=subject, query=query), context
        )
        if response["statusCode"] != 200:
            raise RuntimeError(f"list through the handler answered {response['statusCode']}: {response['body']}")
        next_cursor = json.loads(response["body"])["nextCursor"]
        state["pages"] += 1
        if next_cursor is None or state["pages"] >= PAGES_BEFORE_RESTART:
            state["cursor"], state["pages"] = None, 0
        else:
            state["cursor"] = next_cursor

    return time_calls(call, requests=requests, warmup=warmup)


def measure_handler_detail(org: BigOrg, *, requests: int, warmup: int) -> Latency:
    from api.handler import lambda_handler
    from tests.support.events import http_api_event, lambda_context

    context = lambda_context("leadcrm-api")
    rich = _rich_history_leads(org)
    targets = [lead_id for pair in zip(rich, org.lead_ids, strict=False) for lead_id in pair]

    def call(i: int) -> None:
        path = f"/organizations/{org.id}/leads/{targets[i % len(targets)]}"
        response = lambda_handler(http_api_event("GET", path, sub=OWNER_SUBJECT), context)
        if response["statusCode"] != 200:
            raise RuntimeError(f"detail through the handler answered {response['statusCode']}: {response['body']}")

    return time_calls(call, requests=requests, warmup=warmup)
