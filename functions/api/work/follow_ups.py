"""A lead's follow-up and touches (staff): /organizations/{orgId}/leads/{leadId}/follow-up, …/touches.

The follow-up is the lead's one open contact task (spec "One object"): setting it moves or creates the task,
clearing it cancels the task that stood for it. A touch logs a contact, applies its call outcome, and
replaces, clears or keeps the follow-up (spec "Logging a touch"). Another organization's lead answers 404
LEAD_NOT_FOUND exactly like a random id.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id
from api.lead_versions import IfMatch, check_version, lead_response
from api.operations import Operations
from api.work.schemas_follow_ups import (
    FollowUpBody,
    FollowUpEnvelope,
    FollowUpLead,
    TouchBody,
    TouchEnvelope,
    TouchResultData,
)
from leadcrm.directory.access import require_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.work.rules.follow_ups import FollowUp, TouchFollowUpAction
from leadcrm.work.touches import Touch, clear_lead_follow_up, log_touch, set_lead_follow_up

router = APIGatewayHttpRouter()
ops = Operations(router, "Work")

LEAD_RESPONSES = {200: {"description": "The lead, with its follow-up"}, 404: {"description": "LEAD_NOT_FOUND"}}


@ops.put(
    "/organizations/<orgId>/leads/<leadId>/follow-up",
    "setFollowUp",
    "Set a lead's follow-up",
    "Moves the lead's open contact task onto it (due on its org-local date, at its local time "
    "unless midnight), or creates the task for the lead's owner (else the caller).",
    errors={404: ["LEAD_NOT_FOUND"]},
    ok=LEAD_RESPONSES,
)
def put_follow_up(
    orgId: str, leadId: str, body: Annotated[FollowUpBody, Body()], if_match: IfMatch = None
) -> Response[FollowUpEnvelope]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        lead_id = entity_id(leadId, "LEAD_NOT_FOUND")
        check_version(uow, actor.organization_id, lead_id, if_match, body.version)
        follow_up = FollowUp(at=body.at, type=body.type.value, note=body.note or None)
        lead = set_lead_follow_up(uow, actor, lead_id, follow_up)
        uow.commit()
    return lead_response(200, FollowUpEnvelope(data=FollowUpLead.model_validate(lead)), lead)


@ops.delete(
    "/organizations/<orgId>/leads/<leadId>/follow-up",
    "clearFollowUp",
    "Clear a lead's follow-up",
    "Cancels the contact task that stood for it. A lead without a follow-up is left as it is.",
    errors={404: ["LEAD_NOT_FOUND"]},
    ok=LEAD_RESPONSES,
)
def delete_follow_up(orgId: str, leadId: str, if_match: IfMatch = None) -> Response[FollowUpEnvelope]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        lead_id = entity_id(leadId, "LEAD_NOT_FOUND")
        check_version(uow, actor.organization_id, lead_id, if_match, None)
        lead = clear_lead_follow_up(uow, actor, lead_id)
        uow.commit()
    return lead_response(200, FollowUpEnvelope(data=FollowUpLead.model_validate(lead)), lead)


@ops.post(
    "/organizations/<orgId>/leads/<leadId>/touches",
    "logTouch",
    "Log a touch",
    "Stamps the contact, applies the call outcome (a closed or won lead ignores it: "
    "`applied: false`) and replaces, clears or keeps the follow-up (default keep).",
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
            "OUTCOME_NOT_FROM_NEW",
            "OUTCOME_REQUIRES_TRIAL_BOOKED",
        ],
        404: ["LEAD_NOT_FOUND", "STAGE_NOT_FOUND"],
    },
    ok={
        400: {"description": "OUTCOME_REQUIRES_TRIAL_BOOKED, OUTCOME_NOT_FROM_NEW, NO_STAGE_FOR_STATUS"},
        **LEAD_RESPONSES,
    },
)
def post_touch(
    orgId: str, leadId: str, body: Annotated[TouchBody, Body()], if_match: IfMatch = None
) -> Response[TouchEnvelope]:
    follow_up = body.follow_up
    replacement = None
    if follow_up is not None and follow_up.action is TouchFollowUpAction.REPLACE:
        assert follow_up.at is not None and follow_up.type is not None  # the body's validator
        replacement = FollowUp(at=follow_up.at, type=follow_up.type.value, note=follow_up.note or None)
    touch = Touch(
        channel=body.channel,
        outcome=body.outcome,
        note=body.note or None,
        follow_up_action=follow_up.action if follow_up else TouchFollowUpAction.KEEP,
        follow_up=replacement,
        trial_date=body.trial_date,
    )
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        lead_id = entity_id(leadId, "LEAD_NOT_FOUND")
        check_version(uow, actor.organization_id, lead_id, if_match, body.version)
        result = log_touch(uow, actor, lead_id, touch)
        uow.commit()
    data = TouchResultData(applied=result.applied, lead=FollowUpLead.model_validate(result.lead))
    return lead_response(200, TouchEnvelope(data=data), result.lead)
