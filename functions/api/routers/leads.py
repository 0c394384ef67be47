"""Staff create (G2): `POST /organizations/{orgId}/leads`.

Same path as the public capture, except: the caller must be staff, is the status event's actor, and may set
the source (default manual), a campaign hook of the organization and an assignee; a duplicate is a 409
naming the existing lead. An Idempotency-Key replay answers the first 201 (it never meets the dedup).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import auth_subject, organization_id
from api.idempotent import respond_once
from api.schemas import CreateLeadBody, Envelope, Lead
from leadcrm.db.uow import UnitOfWork
from leadcrm.services.access import require_staff, resolve_actor
from leadcrm.services.leads import NewLead, create_lead

router = APIGatewayHttpRouter()

LEAD_201 = {
    201: {"description": "The lead was created (or the first answer replayed)"},
    409: {"description": "DUPLICATE_LEAD: the person is already a lead here (existingLeadId, existingLeadName)"},
}


@router.post("/organizations/<orgId>/leads", tags=["Leads"], summary="Create a lead (staff)", responses=LEAD_201)
def create(
    orgId: str,  # the path names it as the API documents it
    body: Annotated[CreateLeadBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key")] = None,
) -> Response[Envelope[Lead]]:
    with UnitOfWork() as uow:
        actor = require_staff(resolve_actor(uow.connection, auth_subject(router), organization_id(orgId)))
        new_lead = NewLead(**body.model_dump(exclude={"source"}), source=body.source.value)
        received = body.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return respond_once(
            uow,
            f"leads.create:{actor.organization_id}",
            idempotency_key,
            body,
            201,
            lambda: Envelope[Lead](data=Lead.model_validate(create_lead(uow, actor, new_lead, received=received))),
        )
