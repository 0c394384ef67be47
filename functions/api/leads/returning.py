"""Returning leads: the staff Reopen action, `POST /organizations/{orgId}/leads/{leadId}/reopen`.

Staff (owner, admin, coach). A closed lead (lost, frozen or archived) is reopened exactly like a lead that
came back through an entry point (spec "Returning leads"), with the caller as the Sales actor. An open lead
answers 200 with `meta.outcome: already_open` and nothing changes (a double click or a colleague's earlier
reopen is not an error); a won lead is 400 LEAD_WON_NOT_REOPENABLE. A lead of another organization answers
404 LEAD_NOT_FOUND exactly like a random id.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.leads.schemas_returning import ReopenEnvelope, ReopenLeadBody, ReopenMeta, ReturnedLead
from api.operations import Operations
from leadcrm.directory.access import require_staff
from leadcrm.leads.returning import reopen_lead
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

REOPEN_RESPONSES = {
    200: {"description": "Reopened (meta.outcome reopened), or already open and left as it is (already_open)"},
    400: {"description": "LEAD_WON_NOT_REOPENABLE: a converted lead or a customer is never reopened"},
    404: {"description": "LEAD_NOT_FOUND"},
}


@ops.post(
    "/organizations/<orgId>/leads/<leadId>/reopen",
    "reopenLead",
    "Reopen a closed lead",
    (
        "A closed lead (lost, frozen, archived) goes back to its pipeline's `new` stage; a won lead is not reopened "
        "(400 LEAD_WON_NOT_REOPENABLE)."
    ),
    errors={
        400: ["LEAD_WON_NOT_REOPENABLE"],
        404: ["LEAD_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["PIPELINE_HAS_NO_NEW_STAGE"],
    },
    ok=REOPEN_RESPONSES,
)
def reopen(
    orgId: str,  # the path names them as the API documents them
    leadId: str,
    body: Annotated[ReopenLeadBody | None, Body()] = None,
) -> Response[ReopenEnvelope]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        outcome = reopen_lead(uow, actor, entity_id(leadId, "LEAD_NOT_FOUND"), note=body.note if body else None)
        uow.commit()
    meta = ReopenMeta(outcome="reopened" if outcome.reopened else "already_open")
    return json_response(200, ReopenEnvelope(data=ReturnedLead.model_validate(outcome.lead), meta=meta))
