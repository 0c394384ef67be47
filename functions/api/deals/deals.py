"""Deals, the deal pipeline and the forecast (staff): `/organizations/{orgId}/deals…`.

Staff (owner, admin, coach) open, edit, move, reactivate and read deals and read the forecast; owners and
admins edit the deal pipeline. Literal paths (`…/deals/forecast`, `…/deals/pipeline`) are registered before
`…/deals/<dealId>`. Another organization's deal answers 404 like a random id.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.deals.schemas_deals import (
    AddDealStageBody,
    Compensation,
    CompensationBody,
    CompensationEnvelope,
    CreateDealBody,
    DealDetail,
    DealDetailEnvelope,
    DealEnvelope,
    DealListEnvelope,
    DealPipelineEnvelope,
    DealPipelineOut,
    DealResponse,
    Forecast,
    ForecastEnvelope,
    MoveDealBody,
    ReactivateDealBody,
    RenameDealPipelineBody,
    ReorderDealStagesBody,
    UpdateDealBody,
    UpdateDealStageBody,
)
from api.fields import Day
from api.http import caller, entity_id, json_response
from api.idempotent import respond_once
from api.operations import MANAGER, Operations
from api.params import DEFAULT_PAGE_SIZE, AssigneeParam, CursorParam, FromDay, PageSize, ToDay, assignee_of
from leadcrm.deals import creation, transitions
from leadcrm.deals import deals as service
from leadcrm.deals import pipelines as pipelines
from leadcrm.deals import queries as queries
from leadcrm.deals.forecast import ForecastQuery, forecast
from leadcrm.deals.rules.deals import DealStatus, Evidence, ForecastCategory, StageKind
from leadcrm.deals.rules.forecast import Period
from leadcrm.deals.rules.pipelines import StageSettings
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.directory.rules import Actor
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Deals")

DEALS = "/organizations/<orgId>/deals"
DEAL = f"{DEALS}/<dealId>"
PIPELINE = f"{DEALS}/pipeline"
STAGES = f"{PIPELINE}/stages"
WRITE_RESPONSES = {
    400: {"description": "evidence missing (e.g. PROPOSAL_REFERENCE_REQUIRED, LOSS_REASON_REQUIRED)"},
    404: {"description": "DEAL_NOT_FOUND, DEAL_STAGE_NOT_FOUND"},
    409: {"description": "DEAL_VERSION_CONFLICT, DEAL_SEALED, DEAL_CLOSED, DEAL_STALLED, DEAL_TRANSITION_NOT_ALLOWED"},
}
# A route that names responses documents its success status itself (the resolver adds 200 only otherwise).
UPDATED = {200: {"description": "The deal as written"}, **WRITE_RESPONSES}


def _staff(uow: UnitOfWork, orgId: str) -> Actor:
    return require_staff(caller(uow, router, orgId))


def _manager(uow: UnitOfWork, orgId: str) -> Actor:
    return require_manager(caller(uow, router, orgId))


def _deal_id(raw: str) -> uuid.UUID:
    return entity_id(raw, "DEAL_NOT_FOUND")


def _pipeline(view: pipelines.DealPipeline) -> DealPipelineEnvelope:
    return DealPipelineEnvelope(data=DealPipelineOut.model_validate(view, from_attributes=True))


def _deal(row: dict) -> DealEnvelope:
    return DealEnvelope(data=DealResponse.model_validate(row))


# -- the forecast ------------------------------------------------------------------------------------------


@ops.get(
    f"{DEALS}/forecast",
    "getDealForecast",
    "Forecast per period and owner, per currency",
    (
        "Open and won value per `interval` (month or quarter) and assignee, per currency, weighted by stage "
        "probability. `from`/`to` are local days; the range is at most 36 intervals and `from` comes before `to`."
    ),
    errors={400: ["INVALID_PERIOD"]},
)
def read_forecast(
    orgId: str,
    interval: Annotated[Period, Query(description="the size of each row's period")] = Period.MONTH,
    from_: FromDay = None,
    to: ToDay = None,
    assignee: AssigneeParam = None,
) -> ForecastEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        document = forecast(
            uow.connection,
            actor.organization_id,
            ForecastQuery(interval=interval, first=from_, last=to, assignee=assignee_of(assignee, actor)),
        )
    return ForecastEnvelope(data=Forecast.model_validate(document))


# -- the deal pipeline --------------------------------------------------------------------------------------


@ops.get(
    PIPELINE,
    "getDealPipeline",
    "The deal pipeline and its stages",
    "The organization's one deal pipeline and its stages in order.",
)
def read_pipeline(orgId: str) -> DealPipelineEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        view = pipelines.get_deal_pipeline(uow.connection, actor.organization_id)
        uow.commit()  # keeps the pipeline when this read seeded it
    return _pipeline(view)


@ops.patch(
    PIPELINE,
    "renameDealPipeline",
    "Rename the deal pipeline",
    "Renames the deal pipeline.",
    who=MANAGER,
)
def rename_pipeline(orgId: str, body: Annotated[RenameDealPipelineBody, Body()]) -> DealPipelineEnvelope:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = pipelines.rename_pipeline(uow, actor, body.name)
        uow.commit()
    return _pipeline(view)


@ops.post(
    STAGES,
    "addDealStage",
    "Add an open stage to the deal pipeline",
    "Adds an open stage at a position among the open stages; won and lost stages stay last.",
    who=MANAGER,
    errors={
        400: [
            "DEAL_STAGE_KIND",
            "DEAL_STAGE_LIMIT",
            "DEAL_PIPELINE_COVERAGE",
            "DEAL_STAGE_CANNOT_ROT",
            "DEAL_STAGE_CATEGORY_MISMATCH",
            "DEAL_STAGE_ORDER",
            "DEAL_STAGE_PROBABILITY_FIXED",
            "DEAL_STAGE_PROBABILITY_RANGE",
            "DEAL_STAGE_ROTTING_RANGE",
            "STAGE_POSITION_OUT_OF_RANGE",
        ],
    },
    ok={201: {"description": "The pipeline with the new stage"}},
)
def add_stage(orgId: str, body: Annotated[AddDealStageBody, Body()]) -> Response[DealPipelineEnvelope]:
    settings = StageSettings(
        name=body.name,
        kind=StageKind(body.kind),
        probability=body.probability,
        forecast_category=ForecastCategory(body.forecast_category),
        rotting_days=body.rotting_days,
    )
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = pipelines.add_stage(uow, actor, settings, body.position)
        uow.commit()
    return json_response(201, _pipeline(view))


@ops.put(
    f"{STAGES}/order",
    "reorderDealStages",
    "Reorder the deal pipeline's stages",
    "Puts the stages in this order: every stage once, open stages before the closed ones.",
    who=MANAGER,
    errors={400: ["DEAL_PIPELINE_COVERAGE", "DEAL_STAGE_ORDER", "STAGE_ORDER_MISMATCH"]},
)
def reorder_stages(orgId: str, body: Annotated[ReorderDealStagesBody, Body()]) -> DealPipelineEnvelope:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = pipelines.reorder_stages(uow, actor, body.stage_ids)
        uow.commit()
    return _pipeline(view)


@ops.patch(
    f"{STAGES}/<stageId>",
    "updateDealStage",
    "Edit a deal stage's name and defaults",
    "Changes a stage's name, probability and rotting days; a closed stage's probability is fixed.",
    who=MANAGER,
    errors={
        400: [
            "DEAL_STAGE_CANNOT_ROT",
            "DEAL_STAGE_CATEGORY_MISMATCH",
            "DEAL_STAGE_PROBABILITY_FIXED",
            "DEAL_STAGE_PROBABILITY_RANGE",
            "DEAL_STAGE_ROTTING_RANGE",
        ],
        404: ["DEAL_STAGE_NOT_FOUND"],
    },
)
def update_stage(orgId: str, stageId: str, body: Annotated[UpdateDealStageBody, Body()]) -> DealPipelineEnvelope:
    change = pipelines.StageChange(
        name=body.name,
        probability=body.probability,
        forecast_category=ForecastCategory(body.forecast_category) if body.forecast_category else None,
        rotting_days=body.rotting_days,
        rotting_days_sent="rotting_days" in body.model_fields_set,
    )
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = pipelines.update_stage(uow, actor, entity_id(stageId, "DEAL_STAGE_NOT_FOUND"), change)
        uow.commit()
    return _pipeline(view)


# -- deals ---------------------------------------------------------------------------------------------------


@ops.get(
    DEALS,
    "listDeals",
    "List deals, newest first",
    "Deals in keyset pages, newest first, filtered by status, stage, owner and lead.",
)
def index(
    orgId: str,
    status: Annotated[list[DealStatus] | None, Query()] = None,
    stageId: Annotated[uuid.UUID | None, Query()] = None,
    assignee: AssigneeParam = None,
    leadId: Annotated[uuid.UUID | None, Query()] = None,
    membershipId: Annotated[uuid.UUID | None, Query()] = None,
    currency: Annotated[str | None, Query(pattern=r"^[A-Z]{3}$")] = None,
    expectedCloseFrom: Annotated[Day | None, Query()] = None,
    expectedCloseTo: Annotated[Day | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> DealListEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        filters = queries.DealFilters(
            statuses=tuple(status or ()),
            stage_id=stageId,
            assignee=assignee_of(assignee, actor),
            lead_id=leadId,
            membership_id=membershipId,
            currency=currency,
            expected_close_from=expectedCloseFrom,
            expected_close_to=expectedCloseTo,
        )
        rows, next_cursor = queries.list_deals(
            uow.connection, actor.organization_id, filters, cursor=cursor, limit=limit
        )
    return DealListEnvelope(data=[DealResponse.model_validate(r) for r in rows], next_cursor=next_cursor)


@ops.post(
    DEALS,
    "createDeal",
    "Open a deal with a lead or a member",
    (
        "Opens a deal for a lead or a member of this organization (not both unless they are the same person); it "
        "starts on the pipeline's first open stage."
    ),
    errors={
        400: [
            "ASSIGNEE_NOT_STAFF",
            "CURRENCY_UNKNOWN",
            "DEAL_MUST_START_NEW",
            "DEAL_NEEDS_PARTY",
            "DEAL_PARTIES_MISMATCH",
        ],
        404: ["DEAL_NOT_FOUND", "LEAD_NOT_FOUND", "MEMBERSHIP_NOT_FOUND"],
    },
    ok={201: {"description": "Created (or replayed with the same Idempotency-Key)"}, **WRITE_RESPONSES},
)
def create(
    orgId: str,
    body: Annotated[CreateDealBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key", max_length=255)] = None,
) -> Response[DealEnvelope]:
    new = creation.NewDeal(
        title=body.title,
        offer_type=body.offer_type,
        offer_ref=body.offer_ref,
        lead_id=body.lead_id,
        membership_id=body.membership_id,
        value_minor=body.value_minor,
        currency=body.currency,
        expected_close_date=body.expected_close_date,
        owner_user_id=body.assignee_user_id,
        stage_id=body.stage_id,
        probability=body.probability,
        forecast_category=ForecastCategory(body.forecast_category) if body.forecast_category else None,
    )
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        return respond_once(
            uow,
            f"deals.create:{actor.organization_id}",
            idempotency_key,
            body,
            201,
            lambda: _deal(creation.create_deal(uow, actor, new)),
        )


@ops.get(
    DEAL,
    "getDeal",
    "One deal with its history and compensations",
    "The deal with its stage history and the compensations recorded on it.",
    errors={404: ["DEAL_NOT_FOUND"]},
)
def read(orgId: str, dealId: str) -> DealDetailEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        deal = queries.get_deal(uow.connection, actor.organization_id, _deal_id(dealId))
    return DealDetailEnvelope(data=DealDetail.model_validate(deal))


@ops.patch(
    DEAL,
    "updateDeal",
    "Edit an open deal",
    (
        "Changes an open deal's value, currency, owner, expected close and offer; a closed-won deal is sealed. Send "
        "the `version` you read: a stale one is 409 DEAL_VERSION_CONFLICT."
    ),
    errors={
        400: ["ASSIGNEE_NOT_STAFF", "CURRENCY_UNKNOWN"],
        404: ["DEAL_NOT_FOUND"],
        409: ["DEAL_VERSION_CONFLICT", "DEAL_SEALED", "DEAL_CLOSED"],
    },
    ok=UPDATED,
)
def patch(orgId: str, dealId: str, body: Annotated[UpdateDealBody, Body()]) -> DealEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        row = service.update_deal(uow, actor, _deal_id(dealId), body.version, service.DealChange(body.changes()))
        uow.commit()
    return _deal(row)


@ops.post(
    f"{DEAL}/move",
    "moveDeal",
    "Move a deal to a stage",
    (
        "Moves the deal along the transition table; each stage asks for its evidence (discovery: activityAt, proposal: "
        "a reference, negotiation: activityNote, won: a closure reason, lost: a loss reason)."
    ),
    errors={
        400: [
            "DISCOVERY_ACTIVITY_REQUIRED",
            "PROPOSAL_REFERENCE_REQUIRED",
            "NEGOTIATION_ACTIVITY_REQUIRED",
            "CLOSE_REASON_REQUIRED",
            "LOSS_REASON_REQUIRED",
        ],
        404: ["DEAL_NOT_FOUND", "DEAL_STAGE_NOT_FOUND"],
        409: [
            "DEAL_VERSION_CONFLICT",
            "DEAL_SEALED",
            "DEAL_CLOSED",
            "DEAL_STALLED",
            "DEAL_TRANSITION_NOT_ALLOWED",
            "DEAL_ALREADY_ON_STAGE",
        ],
    },
    ok=UPDATED,
)
def move(orgId: str, dealId: str, body: Annotated[MoveDealBody, Body()]) -> DealEnvelope:
    evidence = Evidence(
        activity_at=body.activity_at,
        activity_note=body.activity_note,
        document_ref=body.document_ref,
        quote_ref=body.quote_ref,
        close_reason=body.close_reason,
        loss_reason=body.loss_reason,
        loss_note=body.loss_note,
    )
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        row = transitions.move_deal(uow, actor, _deal_id(dealId), body.version, body.stage_id, evidence)
        uow.commit()
    return _deal(row)


@ops.post(
    f"{DEAL}/reactivate",
    "reactivateDeal",
    "Reactivate a stalled or closed-lost deal",
    "A stalled or closed-lost deal goes back to an open stage, with a reason.",
    errors={
        400: ["REACTIVATION_REASON_REQUIRED"],
        404: ["DEAL_NOT_FOUND"],
        409: ["DEAL_VERSION_CONFLICT", "DEAL_SEALED", "DEAL_NOT_REACTIVATABLE", "DEAL_TRANSITION_NOT_ALLOWED"],
    },
    ok=UPDATED,
)
def reactivate(orgId: str, dealId: str, body: Annotated[ReactivateDealBody, Body()]) -> DealEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        row = transitions.reactivate_deal(uow, actor, _deal_id(dealId), body.version, body.reason)
        uow.commit()
    return _deal(row)


@ops.post(
    f"{DEAL}/compensations",
    "addDealCompensation",
    "Record a correction of a closed-won deal",
    (
        "A sealed closed-won deal never changes: a refund or upsell is recorded as a compensation that the forecast "
        "and reports add to it."
    ),
    errors={404: ["DEAL_NOT_FOUND"], 409: ["DEAL_NOT_WON", "DEAL_VERSION_CONFLICT"]},
    ok={
        201: {"description": "The compensation"},
        404: {"description": "DEAL_NOT_FOUND"},
        409: {"description": "DEAL_NOT_WON"},
    },
)
def compensate(orgId: str, dealId: str, body: Annotated[CompensationBody, Body()]) -> Response[CompensationEnvelope]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        row = transitions.record_compensation(
            uow, actor, _deal_id(dealId), body.amount_minor, body.reason, body.document_ref
        )
        uow.commit()
    return json_response(201, CompensationEnvelope(data=Compensation.model_validate(row)))
