"""Campaign hooks (staff): `/organizations/{orgId}/leads/campaigns`.

Registered before `…/leads/{leadId}` (api.handler), so `campaigns` is never read as a lead id.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.leads.schemas_campaigns import Campaign, CreateCampaignBody, UpdateCampaignBody
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, CursorParam, PageSize
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.access import require_staff
from leadcrm.leads.campaigns import create_manual_campaign, list_campaigns, update_campaign
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")


@ops.get(
    "/organizations/<orgId>/leads/campaigns",
    "listCampaigns",
    "Campaign hooks, by name",
    "The organization's campaign hooks (from Meta, UTM tags or made by hand), by name.",
)
def index(
    orgId: str,  # the path names it as the API documents it
    archived: Annotated[bool, Query(description="true: the archived hooks instead of the live ones")] = False,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[Campaign]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        page = list_campaigns(uow.connection, actor.organization_id, archived=archived, limit=limit, cursor=cursor)
    return ListEnvelope[Campaign](data=[Campaign.model_validate(c) for c in page.items], next_cursor=page.next_cursor)


@ops.post(
    "/organizations/<orgId>/leads/campaigns",
    "createCampaign",
    "Create a manual campaign bucket",
    "A manual campaign bucket that leads, spend and reports can name.",
    ok={201: {"description": "The campaign"}},
)
def create(orgId: str, body: Annotated[CreateCampaignBody, Body()]) -> Response[Envelope[Campaign]]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = create_manual_campaign(
            uow.connection, actor.organization_id, name=body.name, channel=body.channel, color=body.color
        )
        uow.commit()
    return json_response(201, Envelope[Campaign](data=Campaign.model_validate(row)))


@ops.patch(
    "/organizations/<orgId>/leads/campaigns/<campaignId>",
    "updateCampaign",
    "Rename, recolour or archive a campaign",
    "Renames, recolours or archives a campaign; an archived campaign keeps its leads and reports.",
    errors={404: ["CAMPAIGN_NOT_FOUND"]},
)
def change(orgId: str, campaignId: str, body: Annotated[UpdateCampaignBody, Body()]) -> Envelope[Campaign]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = update_campaign(
            uow.connection,
            actor.organization_id,
            entity_id(campaignId, "CAMPAIGN_NOT_FOUND"),
            body.model_dump(exclude_unset=True),
        )
        uow.commit()
    return Envelope[Campaign](data=Campaign.model_validate(row))
