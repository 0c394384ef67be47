"""Erasing leads (owner/admin): single and bulk erase.

The literal path …/leads/bulk-erase is registered before the lead-id routes of other routers. A lead of
another organization answers 404 LEAD_NOT_FOUND exactly like a random id (in bulk: failed, LEAD_NOT_FOUND).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id
from api.leads.schemas_erase import BulkEraseBody, BulkEraseOutcome, EraseFailure
from api.operations import MANAGER, Operations
from api.schemas import Envelope
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.directory.rules import Actor
from leadcrm.leads import erase as service
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

LEADS = "/organizations/<orgId>/leads"


def _manager(uow: UnitOfWork, orgId: str) -> Actor:
    return gate(WorkspaceAction.ERASE)(caller(uow, router, orgId))


@ops.post(
    f"{LEADS}/bulk-erase",
    "bulkEraseLeads",
    "Erase many leads",
    (
        "Erases up to 1,000 leads as `DELETE …/leads/{leadId}` does each: linked tasks first, then every row that "
        "names the person; what failed is reported per lead."
    ),
    who=MANAGER,
    errors={404: ["LEAD_NOT_FOUND"]},
)
def bulk_erase(orgId: str, body: Annotated[BulkEraseBody, Body()]) -> Envelope[BulkEraseOutcome]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        result = service.bulk_erase(uow, actor, body.lead_ids)
        uow.commit()
    failed = [EraseFailure(lead_id=lead_id, reason=reason) for lead_id, reason in result.failed]
    return Envelope[BulkEraseOutcome](data=BulkEraseOutcome(erased=result.erased, failed=failed))


@ops.delete(
    f"{LEADS}/<leadId>",
    "eraseLead",
    "Erase a lead and everything that names it",
    (
        "Erases the person: the lead and every row that names them (tasks first, then touches, threads, consent, "
        "deals' links, enrichments); nothing personal is left. Not undoable."
    ),
    who=MANAGER,
    errors={404: ["LEAD_NOT_FOUND"]},
    ok={204: {"description": "The lead was erased"}},
)
def erase(orgId: str, leadId: str) -> Response[None]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        service.erase_lead(uow, actor, entity_id(leadId, "LEAD_NOT_FOUND"))
        uow.commit()
    return Response(status_code=204)
