"""Staff routes for leads: `/organizations/{orgId}/leads`."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import auth_subject, entity_id, organization_id
from api.idempotent import respond_once
from api.schemas import CreateLeadBody, Envelope, Lead, LeadDetail, ListEnvelope
from leadcrm.db.uow import UnitOfWork
from leadcrm.domain.statuses import StageCategory
from leadcrm.services.access import require_staff, resolve_actor
from leadcrm.services.leads import NewLead, create_lead, get_lead, list_leads

router = APIGatewayHttpRouter()

LEAD_201 = {201: {"description": "The lead was created (or the first answer replayed)"}}


@router.post("/organizations/<orgId>/leads", tags=["Leads"], summary="Create a lead (staff)", responses=LEAD_201)
def create(
    orgId: str,  # the path names it as the API documents it
    body: Annotated[CreateLeadBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key")] = None,
) -> Response[Envelope[Lead]]:
    with UnitOfWork() as uow:
        actor = require_staff(resolve_actor(uow.connection, auth_subject(router), organization_id(orgId)))
        new_lead = NewLead(**body.model_dump(exclude={"source"}), source=body.source.value)
        return respond_once(
            uow,
            f"leads.create:{actor.organization_id}",
            idempotency_key,
            body,
            201,
            lambda: Envelope[Lead](data=Lead.model_validate(create_lead(uow, actor, new_lead))),
        )


@router.get("/organizations/<orgId>/leads/<leadId>", tags=["Leads"], summary="A lead with its timeline")
def read(orgId: str, leadId: str) -> Envelope[LeadDetail]:
    with UnitOfWork() as uow:
        actor = require_staff(resolve_actor(uow.connection, auth_subject(router), organization_id(orgId)))
        lead = get_lead(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    return Envelope[LeadDetail](data=LeadDetail.model_validate(lead))


@router.get("/organizations/<orgId>/leads", tags=["Leads"], summary="Leads, newest first (keyset pages)")
def index(
    orgId: str,  # the path names it as the API documents it
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
    status: Annotated[StageCategory | None, Query()] = None,
) -> ListEnvelope[Lead]:
    with UnitOfWork() as uow:
        actor = require_staff(resolve_actor(uow.connection, auth_subject(router), organization_id(orgId)))
        page = list_leads(
            uow.connection, actor.organization_id, limit=limit, cursor=cursor, status=status.value if status else None
        )
    return ListEnvelope[Lead](data=[Lead.model_validate(i) for i in page.items], next_cursor=page.next_cursor)
