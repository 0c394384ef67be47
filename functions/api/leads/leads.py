"""Staff create (G2): `POST /organizations/{orgId}/leads`.

Same path as the public capture, except: the caller must be staff, is the status event's actor, and may set
the source (default manual), a campaign hook of the organization and an assignee; a duplicate of an open or
won lead is a 409 naming the existing lead. A match on a closed lead (lost, frozen, archived) reopens it
instead (spec "Returning leads"): 200 `{"data": <lead>, "meta": {"outcome": "reopened"}}`, where a new lead
is 201 `{"data": <lead>}`. An Idempotency-Key replay answers the first answer (it never meets the dedup).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller
from api.idempotent import respond_once
from api.leads.schemas_returning import ReopenedByCreateEnvelope
from api.operations import Operations
from api.schemas import CreateLeadBody, Envelope, Lead
from leadcrm.directory.access import require_staff
from leadcrm.leads.intake import Intake, NewLead, create_lead
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

LEAD_201 = {
    201: {"description": "The lead was created (or the first answer replayed)"},
    200: {"description": "The person's closed lead was reopened instead (meta.outcome reopened)"},
    409: {"description": "DUPLICATE_LEAD: the person is already a lead here (existingLeadId, existingLeadName)"},
}


@ops.post(
    "/organizations/<orgId>/leads",
    "createLead",
    "Create a lead",
    (
        "The staff create (G2). A duplicate of an open or won lead is 409 DUPLICATE_LEAD naming it (existingLeadId, "
        "existingLeadName); a match on a closed lead (lost, frozen, archived) reopens it instead and answers 200 with "
        "`meta.outcome: reopened`; a new lead is 201."
    ),
    errors={
        400: ["ASSIGNEE_NOT_STAFF", "CAMPAIGN_NOT_FOUND"],
        404: ["LEAD_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["DUPLICATE_LEAD", "PIPELINE_HAS_NO_NEW_STAGE"],
    },
    ok=LEAD_201,
)
def create(
    orgId: str,  # the path names it as the API documents it
    body: Annotated[CreateLeadBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key")] = None,
) -> Response[Envelope[Lead] | ReopenedByCreateEnvelope]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        new_lead = NewLead(
            **body.model_dump(exclude={"source", "assignee_user_id"}),
            source=body.source.value,
            assigned_to_user_id=body.assignee_user_id,
        )
        received = body.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return respond_once(
            uow,
            f"leads.create:{actor.organization_id}",
            idempotency_key,
            body,
            lambda answer: 200 if isinstance(answer, ReopenedByCreateEnvelope) else 201,
            lambda: _answer(create_lead(uow, actor, new_lead, received=received)),
        )


def _answer(intake: Intake) -> Envelope[Lead] | ReopenedByCreateEnvelope:
    lead = Lead.model_validate(intake.lead)
    return Envelope[Lead](data=lead) if intake.created else ReopenedByCreateEnvelope(data=lead)
