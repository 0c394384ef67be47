"""Attribution: a lead's touch log and the audited correction of its acquisition (staff), and campaign
spend entries (owner/admin) (issue 9). The per-campaign report is `…/leads/analytics/campaigns`.

Registered before `…/leads/{leadId}` (api.handler).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.analytics.schemas_analytics import (
    CorrectAttributionBody,
    LeadAttributionOut,
    SpendBody,
    SpendOut,
    TouchOut,
    UpdateSpendBody,
)
from api.http import caller, entity_id, json_response
from api.schemas import Envelope, ListEnvelope
from leadcrm.analytics import attribution, spend
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()

TAGS = ["Attribution"]
SPEND_PATH = "/organizations/<orgId>/leads/campaigns/<campaignId>/spend"


def _attribution_out(result: attribution.LeadAttribution) -> LeadAttributionOut:
    return LeadAttributionOut(
        first_touch=TouchOut.model_validate(result.first_touch) if result.first_touch else None,
        touches=[TouchOut.model_validate(t) for t in result.touches],
    )


@router.get(
    "/organizations/<orgId>/leads/<leadId>/attribution",
    tags=TAGS,
    summary="A lead's first touch (its acquisition) and touch log",
)
def lead_attribution(orgId: str, leadId: str) -> Envelope[LeadAttributionOut]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        result = attribution.lead_attribution(
            uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND")
        )
    return Envelope[LeadAttributionOut](data=_attribution_out(result))


@router.put(
    "/organizations/<orgId>/leads/<leadId>/attribution",
    tags=TAGS,
    summary="Correct a lead's acquisition channel and campaign, with a reason (audited on the timeline)",
)
def correct(orgId: str, leadId: str, body: Annotated[CorrectAttributionBody, Body()]) -> Envelope[LeadAttributionOut]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        result = attribution.correct_attribution(
            uow.connection,
            actor,
            entity_id(leadId, "LEAD_NOT_FOUND"),
            channel=body.channel,
            campaign_id=body.campaign_id,
            reason=body.reason,
        )
        uow.commit()
    return Envelope[LeadAttributionOut](data=_attribution_out(result))


@router.get(SPEND_PATH, tags=TAGS, summary="A campaign's spend entries, latest period first")
def spend_index(orgId: str, campaignId: str) -> ListEnvelope[SpendOut]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        rows = spend.list_spend(
            uow.connection, actor.organization_id, entity_id(campaignId, "CAMPAIGN_NOT_FOUND")
        )
    return ListEnvelope[SpendOut](data=[SpendOut.model_validate(r) for r in rows], next_cursor=None)


@router.post(
    SPEND_PATH,
    tags=TAGS,
    summary="Record a campaign's spend for a period",
    responses={201: {"description": "The spend entry"}},
)
def spend_create(orgId: str, campaignId: str, body: Annotated[SpendBody, Body()]) -> Response[Envelope[SpendOut]]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = spend.add_spend(
            uow.connection,
            actor,
            entity_id(campaignId, "CAMPAIGN_NOT_FOUND"),
            spend.SpendEntry(
                period_start=body.period_start,
                period_end=body.period_end,
                amount=body.amount,
                currency=body.currency,
                note=body.note,
            ),
        )
        uow.commit()
    return json_response(201, Envelope[SpendOut](data=SpendOut.model_validate(row)))


@router.patch(SPEND_PATH + "/<spendId>", tags=TAGS, summary="Change a spend entry")
def spend_change(
    orgId: str, campaignId: str, spendId: str, body: Annotated[UpdateSpendBody, Body()]
) -> Envelope[SpendOut]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = spend.change_spend(
            uow.connection,
            actor,
            entity_id(campaignId, "CAMPAIGN_NOT_FOUND"),
            entity_id(spendId, "SPEND_NOT_FOUND"),
            body.model_dump(exclude_unset=True),
        )
        uow.commit()
    return Envelope[SpendOut](data=SpendOut.model_validate(row))


@router.delete(
    SPEND_PATH + "/<spendId>", tags=TAGS, summary="Delete a spend entry", responses={204: {"description": "Deleted"}}
)
def spend_remove(orgId: str, campaignId: str, spendId: str) -> Response[None]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        spend.remove_spend(
            uow.connection, actor, entity_id(campaignId, "CAMPAIGN_NOT_FOUND"), entity_id(spendId, "SPEND_NOT_FOUND")
        )
        uow.commit()
    return Response(status_code=204)
