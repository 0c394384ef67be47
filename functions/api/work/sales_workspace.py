"""The Sales workspace (issue 26): the Board's versioned stage write, the Sales sheet's results, and what the
caller may do there. The workspace's other reads are the leads routes (the Work queue is
`GET …/leads/queue`, with `view=needs_reply`; the Board lists `GET …/leads?pipelineId=`; a sheet is
`GET …/leads/{leadId}`), and its link candidates are `api.leads.conversion`'s.

Both writes are versioned: the version the caller read (`version` in the body, or If-Match) is required, and
a lead written since answers 409 LEAD_VERSION_CONFLICT with the lead as it is now.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id
from api.idempotent import respond_once
from api.lead_versions import IfMatch, check_version, conflicts_with_lead, etag, expected_version, lead_response
from api.operations import MEMBER, Operations
from api.work.schemas_follow_ups import FollowUpLead
from api.work.schemas_sales_workspace import (
    KEEP,
    ResultBody,
    SalesLeadEnvelope,
    StageWriteBody,
    WorkspaceAccess,
    WorkspaceAccessEnvelope,
)
from leadcrm.directory.actions import WorkspaceAction, allowed_actions, gate
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest
from leadcrm.work.rules.follow_ups import FollowUp, TouchFollowUpAction
from leadcrm.work.sales_workspace import SalesResult, log_result, write_stage
from leadcrm.work.touches import TOUCH_COLUMNS, read_lead

router = APIGatewayHttpRouter()
ops = Operations(router, "Work")

WORKSPACE = "/organizations/<orgId>/sales-workspace"
LEAD = f"{WORKSPACE}/leads/<leadId>"

MOVE_REFUSALS = [
    "CONVERT_REQUIRED",
    "STAGE_NOT_IN_PIPELINE",
    "STAGE_ARCHIVED",
    "LOST_REASON_REQUIRED",
    "LOST_REASON_NOT_LOST",
    "TRIAL_DATE_REQUIRED",
    "LEAD_VERSION_REQUIRED",
]


def _required_version(if_match: str | None, body_version: int | None) -> int:
    version = expected_version(if_match, body_version)
    if version is None:
        raise BadRequest("Send the version of the lead you read (version or If-Match).", code="LEAD_VERSION_REQUIRED")
    return version


def _check(uow: UnitOfWork, organization_id: uuid.UUID, lead_id: uuid.UUID, version: int) -> None:
    check_version(uow, organization_id, lead_id, None, version)


@ops.put(
    f"{LEAD}/stage",
    "writeSalesStage",
    "Move the lead to a stage (the Board's versioned drag)",
    "Moves the lead's primary placement onto the stage, with the rules of every move: a converted stage is "
    "400 CONVERT_REQUIRED (the Convert dialog owns it), a lost one needs `lostReason`; a trial_booked stage "
    "needs `trialDate` (400 TRIAL_DATE_REQUIRED). Answers the lead with its new version (also the ETag).",
    errors={400: MOVE_REFUSALS, 404: ["LEAD_NOT_FOUND", "STAGE_NOT_FOUND"]},
)
def put_stage(
    orgId: str, leadId: str, body: Annotated[StageWriteBody, Body()], if_match: IfMatch = None
) -> Response[SalesLeadEnvelope]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.MOVE_STAGE)(caller(uow, router, orgId))
        lead_id = entity_id(leadId, "LEAD_NOT_FOUND")
        version = _required_version(if_match, body.version)
        with conflicts_with_lead():  # checked on the row the move locks: no statement of its own
            lead = write_stage(
                uow,
                actor,
                lead_id,
                body.stage_id,
                trial_date=body.trial_date,
                lost_reason=body.lost_reason,
                expected_version=version,
            )
        if any(column.name not in lead for column in TOUCH_COLUMNS):  # no move: the row read, without its stamps
            lead = read_lead(uow.connection, actor.organization_id, lead_id)
        uow.commit()
    return lead_response(200, SalesLeadEnvelope(data=FollowUpLead.model_validate(lead)), lead)


def _result(body: ResultBody) -> SalesResult:
    if body.follow_up == KEEP:
        action, follow_up = TouchFollowUpAction.KEEP, None
    elif body.follow_up is None:
        action, follow_up = TouchFollowUpAction.CLEAR, None
    else:
        new = body.follow_up
        assert not isinstance(new, str)
        action, follow_up = TouchFollowUpAction.REPLACE, FollowUp(at=new.at, type=new.type.value, note=new.note or None)
    return SalesResult(
        outcome=body.outcome,
        note=body.note,
        channel=body.channel,
        follow_up_action=action,
        follow_up=follow_up,
        stage_id=body.stage_id,
        trial_date=body.trial_date,
        lost_reason=body.lost_reason,
    )


@ops.post(
    f"{LEAD}/results",
    "logSalesResult",
    "Log a contact result on the lead's Sales sheet",
    "One operation and one unit of work: the touch with its call outcome (the rules of `POST …/touches` and the "
    "call-outcome state machine), the follow-up replaced (`followUp: {at, type?, note?}`), cleared (`null`) or "
    'kept (`"keep"`, the default), then the optional stage move (the rules of the stage write). Without an '
    "outcome or a note no contact is logged, only the follow-up change and the move. One timeline group, one "
    "version bump. Answers the lead with its new version (also the ETag).",
    errors={
        400: [
            *MOVE_REFUSALS,
            "RESULT_EMPTY",
            "NO_STAGE_FOR_STATUS",
            "OUTCOME_NOT_FROM_NEW",
            "OUTCOME_REQUIRES_TRIAL_BOOKED",
        ],
        404: ["LEAD_NOT_FOUND", "STAGE_NOT_FOUND"],
    },
)
def post_result(
    orgId: str,
    leadId: str,
    body: Annotated[ResultBody, Body()],
    if_match: IfMatch = None,
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key", max_length=255)] = None,
) -> Response[SalesLeadEnvelope]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.LOG_RESULTS)(caller(uow, router, orgId))
        lead_id = entity_id(leadId, "LEAD_NOT_FOUND")
        version = _required_version(if_match, body.version)
        result = _result(body)

        def produce() -> SalesLeadEnvelope:
            # Inside the key's claim: a replay answers the first answer, never meets the version check.
            _check(uow, actor.organization_id, lead_id, version)
            return SalesLeadEnvelope(data=FollowUpLead.model_validate(log_result(uow, actor, lead_id, result)))

        response = respond_once(
            uow, f"sales.results:{actor.organization_id}:{lead_id}", idempotency_key, body, 200, produce
        )
    answered: Any = response.body
    if isinstance(answered, dict) and isinstance(answered.get("data"), dict) and "version" in answered["data"]:
        response.headers["ETag"] = etag(answered["data"]["version"])  # Response copied the headers it was given
    return response


@ops.get(
    f"{WORKSPACE}/access/me",
    "getSalesWorkspaceAccess",
    "What the caller may do in the Sales workspace",
    "The caller's role, the organization's features and the actions the caller may take (`view_leads`, "
    "`edit_leads`, `move_stage`, `log_results`, `bulk_move`, `bulk_email`, `convert`, `link_member`, `erase`, "
    "`edit_pipelines`, `connect_integrations`): each listed exactly when the gate of its routes lets the caller "
    "through (one table, `leadcrm.directory.actions`). Any member may ask; a member below staff gets no actions.",
    who=MEMBER,
)
def access_me(orgId: str) -> WorkspaceAccessEnvelope:
    with UnitOfWork() as uow:
        actor = caller(uow, router, orgId)
    access = WorkspaceAccess(
        role=actor.role.value if actor.role else None,
        features=sorted(actor.features),
        actions=allowed_actions(actor),
    )
    return WorkspaceAccessEnvelope(data=access)
