"""Enrichment, scoring models and qualification (issue 10), all under the lead routes' staff gate; a new
scoring model is owner/admin.

Literal paths only after `…/leads/{leadId}/` (enrichments, qualification, score), so they never shadow
another router's route. Another organization's lead answers 404 LEAD_NOT_FOUND like a random id.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.qualification.schemas_qualification import (
    CriteriaBody,
    Enrichment,
    EnrichmentBody,
    LeadEnrichments,
    Qualification,
    ScoringModel,
    ScoringModelBody,
    TransitionBody,
)
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.qualification import qualification as service
from leadcrm.qualification import scoring
from leadcrm.qualification.rules.qualification import Criterion, QualificationAction

router = APIGatewayHttpRouter()

TAGS = ["Qualification"]
LEAD = "/organizations/<orgId>/leads/<leadId>"


@router.get("/organizations/<orgId>/scoring-models", tags=TAGS, summary="Scoring model versions, newest first")
def models(orgId: str) -> ListEnvelope[ScoringModel]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = scoring.list_models(uow.connection, actor.organization_id)
    # Versions an owner writes by hand: answered whole, nextCursor null as every list has one.
    return ListEnvelope[ScoringModel](data=[ScoringModel.model_validate(r) for r in rows], next_cursor=None)


@router.post(
    "/organizations/<orgId>/scoring-models",
    tags=TAGS,
    summary="A new scoring model version (owner/admin); every lead is rescored by the rescore_leads job",
    responses={201: {"description": "The new version"}},
)
def create_model(orgId: str, body: Annotated[ScoringModelBody, Body()]) -> Response[Envelope[ScoringModel]]:
    rules = [rule.model_dump(mode="json", by_alias=True, exclude_none=True) for rule in body.rules]
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = scoring.create_model(uow.connection, actor, rules, body.qualify_threshold, body.nurture_days)
        uow.commit()
    return json_response(201, Envelope[ScoringModel](data=ScoringModel.model_validate(row)))


@router.post(
    f"{LEAD}/enrichments",
    tags=TAGS,
    summary="Add what was learned about the lead (source and confidence); the lead's own fields stay as sent",
    responses={201: {"description": "The enrichment"}},
)
def enrich(orgId: str, leadId: str, body: Annotated[EnrichmentBody, Body()]) -> Response[Envelope[Enrichment]]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = service.enrich_lead(
            uow,
            actor,
            entity_id(leadId, "LEAD_NOT_FOUND"),
            category=body.category,
            field=body.field,
            value=body.value,
            source=body.source,
            confidence=body.confidence,
        )
        uow.commit()
    return json_response(201, Envelope[Enrichment](data=Enrichment.model_validate(row)))


@router.get(f"{LEAD}/enrichments", tags=TAGS, summary="The lead's enriched fields: current values and history")
def enrichments(orgId: str, leadId: str) -> Envelope[LeadEnrichments]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        found = service.lead_enrichments_of(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    return Envelope[LeadEnrichments](data=LeadEnrichments.model_validate(found))


@router.get(f"{LEAD}/qualification", tags=TAGS, summary="The lead's qualification state, BANT answers and score")
def read(orgId: str, leadId: str) -> Envelope[Qualification]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = service.qualification_of(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    return Envelope[Qualification](data=Qualification.model_validate(view))


@router.post(f"{LEAD}/score", tags=TAGS, summary="Recompute the lead's score now")
def rescore(orgId: str, leadId: str) -> Envelope[Qualification]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = service.rescore_now(uow, actor, entity_id(leadId, "LEAD_NOT_FOUND"))
        uow.commit()
    return Envelope[Qualification](data=Qualification.model_validate(view))


@router.put(
    f"{LEAD}/qualification/criteria",
    tags=TAGS,
    summary="Record BANT answers with evidence (a criterion marked met needs evidence)",
)
def criteria(orgId: str, leadId: str, body: Annotated[CriteriaBody, Body()]) -> Envelope[Qualification]:
    changes = {
        Criterion(name): (answer.status, answer.evidence)
        for name, answer in (
            ("budget", body.budget),
            ("authority", body.authority),
            ("need", body.need),
            ("timeline", body.timeline),
        )
        if answer is not None
    }
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = service.update_criteria(uow, actor, entity_id(leadId, "LEAD_NOT_FOUND"), changes)
        uow.commit()
    return Envelope[Qualification](data=Qualification.model_validate(view))


def _transition(
    orgId: str, leadId: str, action: QualificationAction, body: TransitionBody | None
) -> Envelope[Qualification]:
    body = body or TransitionBody()
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = service.transition(
            uow,
            actor,
            entity_id(leadId, "LEAD_NOT_FOUND"),
            action,
            reason=body.reason_code,
            note=body.note,
            nurture_days=body.nurture_days,
        )
        uow.commit()
    return Envelope[Qualification](data=Qualification.model_validate(view))


@router.post(f"{LEAD}/qualification/qualify", tags=TAGS, summary="Qualify (score ≥ threshold, BANT met)")
def qualify(orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.QUALIFY, body)


@router.post(f"{LEAD}/qualification/nurture", tags=TAGS, summary="Put into nurture; a re-evaluation is scheduled")
def nurture(orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.NURTURE, body)


@router.post(f"{LEAD}/qualification/disqualify", tags=TAGS, summary="Disqualify (reasonCode is mandatory)")
def disqualify(
    orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None
) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.DISQUALIFY, body)


@router.post(f"{LEAD}/qualification/requalify", tags=TAGS, summary="Requalify a disqualified lead (BANT met)")
def requalify(
    orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None
) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.REQUALIFY, body)
