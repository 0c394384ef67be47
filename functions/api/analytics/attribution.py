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
from api.operations import MANAGER, Operations
from api.schemas import Envelope, ListEnvelope
from leadcrm.analytics import attribution, spend
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Analytics")

SPEND_PATH = "/organizations/<orgId>/leads/campaigns/<campaignId>/spend"


def _attribution_out(result: attribution.LeadAttribution) -> LeadAttributionOut:
    return LeadAttributionOut(
        first_touch=TouchOut.model_validate(result.first_touch) if result.first_touch else None,
        touches=[TouchOut.model_validate(t) for t in result.touches],
    )


@ops.get(
    "/organizations/<orgId>/leads/<leadId>/attribution",
    "getLeadAttribution",
    "A lead's first touch (its acquisition) and touch log",
    "The lead's acquisition (its first touch's channel and campaign) and its touch log, oldest first.",
    errors={404: ["LEAD_NOT_FOUND"]},
)
def lead_attribution(orgId: str, leadId: str) -> Envelope[LeadAttributionOut]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        result = attribution.lead_attribution(
            uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND")
        )
    return Envelope[LeadAttributionOut](data=_attribution_out(result))


@ops.put(
    "/organizations/<orgId>/leads/<leadId>/attribution",
    "correctLeadAttribution",
    "Correct a lead's acquisition channel and campaign, with a reason (audited on the timeline)",
    "Corrects the acquisition channel and campaign with a reason; the correction is on the lead's timeline.",
    errors={400: ["CAMPAIGN_NOT_FOUND"], 404: ["LEAD_NOT_FOUND"]},
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


@ops.get(
    SPEND_PATH,
    "listCampaignSpend",
    "A campaign's spend entries, latest period first",
    "The campaign's spend entries, latest period first.",
    who=MANAGER,
    errors={404: ["CAMPAIGN_NOT_FOUND"]},
)
def spend_index(orgId: str, campaignId: str) -> ListEnvelope[SpendOut]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        rows = spend.list_spend(
            uow.connection, actor.organization_id, entity_id(campaignId, "CAMPAIGN_NOT_FOUND")
        )
    return ListEnvelope[SpendOut](data=[SpendOut.model_validate(r) for r in rows], next_cursor=None)


@ops.post(
    SPEND_PATH,
    "createCampaignSpend",
    "Record a campaign's spend for a period",
    (
        "Records what the campaign cost over a period; periods of one campaign never overlap (409 "
        "SPEND_PERIOD_OVERLAP) and keep one currency (422 SPEND_CURRENCY_MISMATCH)."
    ),
    who=MANAGER,
    errors={404: ["CAMPAIGN_NOT_FOUND"], 409: ["SPEND_PERIOD_OVERLAP"], 422: ["SPEND_CURRENCY_MISMATCH"]},
    ok={201: {"description": "The spend entry"}},
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


@ops.patch(
    SPEND_PATH + "/<spendId>",
    "updateCampaignSpend",
    "Change a spend entry",
    "Changes a spend entry's amount, currency or period, under the same rules as recording one.",
    who=MANAGER,
    errors={
        400: ["INVALID_PERIOD"],
        404: ["CAMPAIGN_NOT_FOUND", "SPEND_NOT_FOUND"],
        409: ["SPEND_PERIOD_OVERLAP"],
        422: ["SPEND_CURRENCY_MISMATCH"],
    },
)
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


@ops.delete(
    SPEND_PATH + "/<spendId>",
    "deleteCampaignSpend",
    "Delete a spend entry",
    "Deletes a spend entry.",
    who=MANAGER,
    errors={404: ["SPEND_NOT_FOUND"]},
    ok={204: {"description": "Deleted"}},
)
def spend_remove(orgId: str, campaignId: str, spendId: str) -> Response[None]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        spend.remove_spend(
            uow.connection, actor, entity_id(campaignId, "CAMPAIGN_NOT_FOUND"), entity_id(spendId, "SPEND_NOT_FOUND")
        )
        uow.commit()
    return Response(status_code=204)
