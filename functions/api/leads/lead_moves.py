"""Moving leads (staff): stage/status, secondary pipelines, set-primary, bulk moves, ownership, archive.

All staff routes (owner, admin, coach). A lead of another organization answers 404 LEAD_NOT_FOUND exactly
like a random id. The literal paths (…/leads/bulk-move-stage, …/leads/bulk-archive) are registered here,
before the lead-id routes of other routers.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.lead_versions import IfMatch, body_version, check_version, lead_response
from api.leads.schemas_lead_moves import (
    AddPipelineBody,
    BulkArchiveBody,
    BulkArchiveOutcome,
    BulkMoveOutcome,
    BulkMoveStageBody,
    LeadPlacement,
    MovePlacementBody,
    SetPrimaryBody,
    SkippedLead,
    UpdateLeadBody,
)
from api.operations import Operations
from api.schemas import Envelope, Lead
from leadcrm.directory.access import require_staff
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.directory.rules import Actor
from leadcrm.leads import archive as lead_archive
from leadcrm.leads import bulk_moves
from leadcrm.leads import moves as service
from leadcrm.leads import placements as lead_placements
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

LEADS = "/organizations/<orgId>/leads"
LEAD = f"{LEADS}/<leadId>"
PLACEMENTS = f"{LEAD}/pipelines"
PLACEMENT = f"{PLACEMENTS}/<pipelineId>"


def _staff(uow: UnitOfWork, orgId: str) -> Actor:
    return require_staff(caller(uow, router, orgId))


def _lead_id(raw: str) -> uuid.UUID:
    return entity_id(raw, "LEAD_NOT_FOUND")


def _placement_pipeline_id(raw: str) -> uuid.UUID:
    return entity_id(raw, "PLACEMENT_NOT_FOUND")


def _lead(row: dict[str, Any]) -> Response[Envelope[Lead]]:
    """The lead, with its version as the ETag."""
    return lead_response(200, Envelope[Lead](data=Lead.model_validate(row)), row)


def _placement(placement: lead_placements.Placement) -> LeadPlacement:
    return LeadPlacement(
        lead_id=placement.lead_id,
        pipeline_id=placement.pipeline_id,
        stage_id=placement.stage_id,
        primary=placement.is_primary,
    )


def _skipped(skipped: list[tuple[uuid.UUID, str]]) -> list[SkippedLead]:
    return [SkippedLead(lead_id=lead_id, reason=reason) for lead_id, reason in skipped]


# Literal paths first: `bulk-move-stage` must never be read as a lead id.
@ops.post(
    f"{LEADS}/bulk-move-stage",
    "bulkMoveLeadStage",
    "Move many leads onto one stage",
    (
        "Moves many leads onto one stage of a pipeline; each lead that cannot move is skipped with its reason (the "
        "same rules as one move)."
    ),
    errors={404: ["STAGE_NOT_FOUND"]},
)
def bulk_move_stage(orgId: str, body: Annotated[BulkMoveStageBody, Body()]) -> Envelope[BulkMoveOutcome]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.BULK_MOVE)(caller(uow, router, orgId))
        result = bulk_moves.bulk_move_stage(uow, actor, body.stage_id, body.lead_ids, lost_reason=body.lost_reason)
        uow.commit()
    return Envelope[BulkMoveOutcome](data=BulkMoveOutcome(moved=result.moved, skipped=_skipped(result.skipped)))


@ops.post(
    f"{LEADS}/bulk-archive",
    "bulkArchiveLeads",
    "Archive or unarchive many leads",
    "Archives or unarchives up to 10,000 leads at once; ids not of this organization are skipped and reported.",
)
def bulk_archive(orgId: str, body: Annotated[BulkArchiveBody, Body()]) -> Envelope[BulkArchiveOutcome]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        result = lead_archive.bulk_set_archived(uow, actor, body.lead_ids, body.archived)
        uow.commit()
    return Envelope[BulkArchiveOutcome](
        data=BulkArchiveOutcome(changed=result.changed, skipped=_skipped(result.skipped))
    )


@ops.patch(
    LEAD,
    "updateLead",
    "Update a lead: stage/status, owner, test flag, contact details",
    (
        "Changes any of: stage or status (one move of the primary placement, with its rules: a lost lead needs a lost "
        "reason, converting only through convert), owner (active staff), trial date, contact fields, test flag."
    ),
    errors={
        400: [
            "ASSIGNEE_NOT_STAFF",
            "LEAD_NEEDS_CONTACT",
            "NO_STAGE_FOR_STATUS",
            "CONVERT_REQUIRED",
            "STAGE_NOT_IN_PIPELINE",
            "STAGE_ARCHIVED",
            "LOST_REASON_REQUIRED",
            "LOST_REASON_NOT_LOST",
        ],
        404: ["LEAD_NOT_FOUND", "STAGE_NOT_FOUND"],
    },
)
def update(
    orgId: str, leadId: str, body: Annotated[UpdateLeadBody, Body()], if_match: IfMatch = None
) -> Response[Envelope[Lead]]:
    sent = body.model_fields_set
    change = service.LeadUpdate(
        stage_id=body.stage_id,
        status=body.status,
        lost_reason=body.lost_reason,
        details={name: getattr(body, name) for name in service.EDITABLE_DETAILS if name in sent},
        is_test=body.is_test,
        assign="assignee_user_id" in sent,
        assigned_to_user_id=body.assignee_user_id,
    )
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.EDIT_LEADS)(caller(uow, router, orgId))
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, body.version)
        row = service.update_lead(uow, actor, lead_id, change)
        uow.commit()
    return _lead(row)


@ops.post(
    f"{LEAD}/archive",
    "archiveLead",
    "Archive a lead (a flag: its status stays)",
    "Archives the lead: a flag, its status stays; it leaves the lists and the queue until unarchived.",
    errors={404: ["LEAD_NOT_FOUND"]},
)
def archive(orgId: str, leadId: str, if_match: IfMatch = None) -> Response[Envelope[Lead]]:
    return _set_archived(orgId, leadId, if_match, archived=True)


@ops.post(
    f"{LEAD}/unarchive",
    "unarchiveLead",
    "Unarchive a lead",
    "Clears the lead's archived flag.",
    errors={404: ["LEAD_NOT_FOUND"]},
)
def unarchive(orgId: str, leadId: str, if_match: IfMatch = None) -> Response[Envelope[Lead]]:
    return _set_archived(orgId, leadId, if_match, archived=False)


def _set_archived(orgId: str, leadId: str, if_match: str | None, *, archived: bool) -> Response[Envelope[Lead]]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, None)
        row = lead_archive.set_archived(uow, actor, lead_id, archived)
        uow.commit()
    return _lead(row)


@ops.post(
    PLACEMENTS,
    "addLeadPlacement",
    "Add the lead to another pipeline (a secondary placement)",
    "Places the lead in another pipeline (a secondary placement) on a stage of it, by default its `new` stage.",
    errors={
        400: [
            "NO_STAGE_FOR_STATUS",
            "CONVERT_REQUIRED",
            "STAGE_NOT_IN_PIPELINE",
            "STAGE_ARCHIVED",
            "LOST_REASON_REQUIRED",
            "LOST_REASON_NOT_LOST",
        ],
        404: ["LEAD_NOT_FOUND", "PIPELINE_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["ALREADY_IN_PIPELINE", "PIPELINE_ARCHIVED"],
    },
    ok={201: {"description": "The placement was added"}},
)
def add_pipeline(
    orgId: str, leadId: str, body: Annotated[AddPipelineBody, Body()], if_match: IfMatch = None
) -> Response[Envelope[LeadPlacement]]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, body.version)
        placement = lead_placements.add_to_pipeline(uow, actor, lead_id, body.pipeline_id, body.stage_id)
        uow.commit()
    return json_response(201, Envelope[LeadPlacement](data=_placement(placement)))


@ops.post(
    f"{PLACEMENT}/set-primary",
    "setPrimaryPlacement",
    "Make a secondary placement the lead's primary one",
    "Makes a secondary placement the primary one: the lead's status becomes that stage's category.",
    errors={
        400: [
            "CONVERT_REQUIRED",
            "STAGE_NOT_IN_PIPELINE",
            "STAGE_ARCHIVED",
            "LOST_REASON_REQUIRED",
            "LOST_REASON_NOT_LOST",
        ],
        404: ["LEAD_NOT_FOUND", "PIPELINE_NOT_FOUND", "PLACEMENT_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["PIPELINE_ARCHIVED"],
    },
)
def set_primary(
    orgId: str,
    leadId: str,
    pipelineId: str,
    body: Annotated[SetPrimaryBody | None, Body()] = None,
    if_match: IfMatch = None,
) -> Response[Envelope[Lead]]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, body_version(body))
        row = lead_placements.set_primary(
            uow,
            actor,
            lead_id,
            _placement_pipeline_id(pipelineId),
            lost_reason=body.lost_reason if body else None,
        )
        uow.commit()
    return _lead(row)


@ops.patch(
    PLACEMENT,
    "moveLeadPlacement",
    "Move the lead within one of its pipelines",
    (
        "Moves the lead to another stage of one of its pipelines; a move of the primary placement changes the lead's "
        "status, with the same rules as `PATCH …/leads/{leadId}`."
    ),
    errors={
        400: [
            "ASSIGNEE_NOT_STAFF",
            "LEAD_NEEDS_CONTACT",
            "NO_STAGE_FOR_STATUS",
            "CONVERT_REQUIRED",
            "STAGE_NOT_IN_PIPELINE",
            "STAGE_ARCHIVED",
            "LOST_REASON_REQUIRED",
            "LOST_REASON_NOT_LOST",
        ],
        404: ["LEAD_NOT_FOUND", "PLACEMENT_NOT_FOUND", "STAGE_NOT_FOUND"],
    },
)
def move_in_pipeline(
    orgId: str, leadId: str, pipelineId: str, body: Annotated[MovePlacementBody, Body()], if_match: IfMatch = None
) -> Envelope[LeadPlacement]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, body.version)
        placement = lead_placements.move_in_pipeline(
            uow,
            actor,
            lead_id,
            _placement_pipeline_id(pipelineId),
            body.stage_id,
            lost_reason=body.lost_reason,
        )
        uow.commit()
    return Envelope[LeadPlacement](data=_placement(placement))


@ops.delete(
    PLACEMENT,
    "removeLeadPlacement",
    "Remove the lead from a secondary pipeline",
    "Removes a secondary placement; the primary one is never removed (400 PRIMARY_PIPELINE_NOT_REMOVABLE).",
    errors={400: ["PRIMARY_PIPELINE_NOT_REMOVABLE"], 404: ["LEAD_NOT_FOUND", "PLACEMENT_NOT_FOUND"]},
    ok={204: {"description": "The placement was removed"}},
)
def remove_pipeline(orgId: str, leadId: str, pipelineId: str, if_match: IfMatch = None) -> Response[None]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, None)
        lead_placements.remove_from_pipeline(uow, actor, lead_id, _placement_pipeline_id(pipelineId))
        uow.commit()
    return Response(status_code=204)
