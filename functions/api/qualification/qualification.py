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
from api.operations import MANAGER, Operations
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
ops = Operations(router, "Qualification")

LEAD = "/organizations/<orgId>/leads/<leadId>"


@ops.get(
    "/organizations/<orgId>/scoring-models",
    "listScoringModels",
    "Scoring model versions, newest first",
    "The scoring model's versions, newest first.",
)
def models(orgId: str) -> ListEnvelope[ScoringModel]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = scoring.list_models(uow.connection, actor.organization_id)
    # Versions an owner writes by hand: answered whole, nextCursor null as every list has one.
    return ListEnvelope[ScoringModel](data=[ScoringModel.model_validate(r) for r in rows], next_cursor=None)


@ops.post(
    "/organizations/<orgId>/scoring-models",
    "createScoringModel",
    "A new scoring model version (owner/admin); every lead is rescored by the rescore_leads job",
    (
        "Saves the next scoring model version; every lead is then rescored by a job. A model no lead could qualify "
        "under is 400 SCORING_THRESHOLD_UNREACHABLE."
    ),
    who=MANAGER,
    errors={400: ["SCORING_THRESHOLD_UNREACHABLE", "UNKNOWN_ENGAGEMENT_SIGNAL"]},
    ok={201: {"description": "The new version"}},
)
def create_model(orgId: str, body: Annotated[ScoringModelBody, Body()]) -> Response[Envelope[ScoringModel]]:
    rules = [rule.model_dump(mode="json", by_alias=True, exclude_none=True) for rule in body.rules]
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = scoring.create_model(uow.connection, actor, rules, body.qualify_threshold, body.nurture_days)
        uow.commit()
    return json_response(201, Envelope[ScoringModel](data=ScoringModel.model_validate(row)))


@ops.post(
    f"{LEAD}/enrichments",
    "addLeadEnrichment",
    "Add what was learned about the lead (source and confidence); the lead's own fields stay as sent",
    (
        "Adds what was learned about the lead, with its source and confidence; the lead's own fields stay as sent and "
        "the lead is rescored."
    ),
    errors={404: ["LEAD_NOT_FOUND"]},
    ok={201: {"description": "The enrichment"}},
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


@ops.get(
    f"{LEAD}/enrichments",
    "listLeadEnrichments",
    "The lead's enriched fields: current values and history",
    "The lead's enriched fields: the current value of each and its history.",
    errors={404: ["LEAD_NOT_FOUND"]},
)
def enrichments(orgId: str, leadId: str) -> Envelope[LeadEnrichments]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        found = service.lead_enrichments_of(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    return Envelope[LeadEnrichments](data=LeadEnrichments.model_validate(found))


@ops.get(
    f"{LEAD}/qualification",
    "getLeadQualification",
    "The lead's qualification state, BANT answers and score",
    "The lead's qualification state, BANT answers with evidence, and score.",
    errors={404: ["LEAD_NOT_FOUND"]},
)
def read(orgId: str, leadId: str) -> Envelope[Qualification]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = service.qualification_of(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    return Envelope[Qualification](data=Qualification.model_validate(view))


@ops.post(
    f"{LEAD}/score",
    "scoreLead",
    "Recompute the lead's score now",
    "Recomputes the lead's score under the current scoring model now.",
    errors={404: ["LEAD_NOT_FOUND"]},
)
def rescore(orgId: str, leadId: str) -> Envelope[Qualification]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = service.rescore_now(uow, actor, entity_id(leadId, "LEAD_NOT_FOUND"))
        uow.commit()
    return Envelope[Qualification](data=Qualification.model_validate(view))


@ops.put(
    f"{LEAD}/qualification/criteria",
    "setQualificationCriteria",
    "Record BANT answers with evidence (a criterion marked met needs evidence)",
    (
        "Records the BANT answers (budget, authority, need, timeline); a criterion marked met needs its evidence (400 "
        "EVIDENCE_REQUIRED)."
    ),
    errors={400: ["EVIDENCE_REQUIRED"], 404: ["LEAD_NOT_FOUND"]},
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


@ops.post(
    f"{LEAD}/qualification/qualify",
    "qualifyLead",
    "Qualify (score ≥ threshold, BANT met)",
    (
        "Qualifies the lead: its score must reach the model's threshold and every BANT criterion be met, with no "
        "unresolved duplicate."
    ),
    errors={
        404: ["LEAD_NOT_FOUND"],
        409: [
            "DUPLICATES_UNRESOLVED",
            "NOT_SCORED",
            "QUALIFICATION_TRANSITION_NOT_ALLOWED",
            "SCORE_BELOW_THRESHOLD",
            "QUALIFICATION_CRITERIA_NOT_MET",
        ],
    },
)
def qualify(orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.QUALIFY, body)


@ops.post(
    f"{LEAD}/qualification/nurture",
    "nurtureLead",
    "Put into nurture; a re-evaluation is scheduled",
    "Puts the lead into nurture and schedules its re-evaluation.",
    errors={
        404: ["LEAD_NOT_FOUND"],
        409: ["DUPLICATES_UNRESOLVED", "NOT_SCORED", "QUALIFICATION_TRANSITION_NOT_ALLOWED"],
    },
)
def nurture(orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.NURTURE, body)


@ops.post(
    f"{LEAD}/qualification/disqualify",
    "disqualifyLead",
    "Disqualify (reasonCode is mandatory)",
    "Disqualifies the lead; `reasonCode` is mandatory (400 DISQUALIFY_REASON_REQUIRED).",
    errors={
        400: ["DISQUALIFY_REASON_REQUIRED"],
        404: ["LEAD_NOT_FOUND"],
        409: ["DUPLICATES_UNRESOLVED", "NOT_SCORED", "QUALIFICATION_TRANSITION_NOT_ALLOWED"],
    },
)
def disqualify(
    orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None
) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.DISQUALIFY, body)


@ops.post(
    f"{LEAD}/qualification/requalify",
    "requalifyLead",
    "Requalify a disqualified lead (BANT met)",
    "Requalifies a disqualified lead once every BANT criterion is met.",
    errors={
        404: ["LEAD_NOT_FOUND"],
        409: ["DUPLICATES_UNRESOLVED", "QUALIFICATION_TRANSITION_NOT_ALLOWED", "QUALIFICATION_CRITERIA_NOT_MET"],
    },
)
def requalify(
    orgId: str, leadId: str, body: Annotated[TransitionBody | None, Body()] = None
) -> Envelope[Qualification]:
    return _transition(orgId, leadId, QualificationAction.REQUALIFY, body)
