"""Reading leads (staff): `GET /organizations/{orgId}/leads` and `GET …/leads/{leadId}`."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import auth_subject, entity_id, organization_id
from api.schemas import Envelope, Lead, LeadDetail, ListEnvelope
from leadcrm.db.uow import UnitOfWork
from leadcrm.domain.statuses import StageCategory
from leadcrm.services.access import require_staff, resolve_actor
from leadcrm.services.lead_queries import get_lead, list_leads

router = APIGatewayHttpRouter()


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
