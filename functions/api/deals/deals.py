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

TAGS = ["Deals"]
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


@router.get(f"{DEALS}/forecast", tags=TAGS, summary="Forecast per period and owner, per currency (staff)")
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


@router.get(PIPELINE, tags=TAGS, summary="The deal pipeline and its stages (staff)")
def read_pipeline(orgId: str) -> DealPipelineEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        view = pipelines.get_deal_pipeline(uow.connection, actor.organization_id)
        uow.commit()  # keeps the pipeline when this read seeded it
    return _pipeline(view)


@router.patch(PIPELINE, tags=TAGS, summary="Rename the deal pipeline (owner/admin)")
def rename_pipeline(orgId: str, body: Annotated[RenameDealPipelineBody, Body()]) -> DealPipelineEnvelope:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = pipelines.rename_pipeline(uow, actor, body.name)
        uow.commit()
    return _pipeline(view)


@router.post(
    STAGES,
    tags=TAGS,
    summary="Add an open stage to the deal pipeline (owner/admin)",
    responses={201: {"description": "The pipeline with the new stage"}},
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


@router.put(f"{STAGES}/order", tags=TAGS, summary="Reorder the deal pipeline's stages (owner/admin)")
def reorder_stages(orgId: str, body: Annotated[ReorderDealStagesBody, Body()]) -> DealPipelineEnvelope:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = pipelines.reorder_stages(uow, actor, body.stage_ids)
        uow.commit()
    return _pipeline(view)


@router.patch(f"{STAGES}/<stageId>", tags=TAGS, summary="Edit a deal stage's name and defaults (owner/admin)")
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


@router.get(DEALS, tags=TAGS, summary="List deals, newest first (staff)")
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


@router.post(
    DEALS,
    tags=TAGS,
    summary="Open a deal with a lead or a member (staff)",
    responses={201: {"description": "Created (or replayed with the same Idempotency-Key)"}, **WRITE_RESPONSES},
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


@router.get(DEAL, tags=TAGS, summary="One deal with its history and compensations (staff)")
def read(orgId: str, dealId: str) -> DealDetailEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        deal = queries.get_deal(uow.connection, actor.organization_id, _deal_id(dealId))
    return DealDetailEnvelope(data=DealDetail.model_validate(deal))


@router.patch(DEAL, tags=TAGS, summary="Edit an open deal (staff)", responses=UPDATED)
def patch(orgId: str, dealId: str, body: Annotated[UpdateDealBody, Body()]) -> DealEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        row = service.update_deal(uow, actor, _deal_id(dealId), body.version, service.DealChange(body.changes()))
        uow.commit()
    return _deal(row)


@router.post(f"{DEAL}/move", tags=TAGS, summary="Move a deal to a stage (staff)", responses=UPDATED)
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


@router.post(
    f"{DEAL}/reactivate",
    tags=TAGS,
    summary="Reactivate a stalled or closed-lost deal (staff)",
    responses=UPDATED,
)
def reactivate(orgId: str, dealId: str, body: Annotated[ReactivateDealBody, Body()]) -> DealEnvelope:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        row = transitions.reactivate_deal(uow, actor, _deal_id(dealId), body.version, body.reason)
        uow.commit()
    return _deal(row)


@router.post(
    f"{DEAL}/compensations",
    tags=TAGS,
    summary="Record a correction of a closed-won deal (staff)",
    responses={
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
