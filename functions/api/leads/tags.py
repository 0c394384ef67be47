"""Lead tags (staff): `/organizations/{orgId}/leads/tags` and a lead's tags `…/leads/{leadId}/tags`.

Registered before `…/leads/{leadId}` (api.handler), so `tags` is never read as a lead id.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.leads.schemas_tags import CreateTagBody, LeadTagsBody, Tag, TagCategory, UpdateTagBody
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, CursorParam, PageSize
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.access import require_staff
from leadcrm.leads.tags import create_tag, delete_tag, list_tags, replace_lead_tags, update_tag
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")


@ops.get(
    "/organizations/<orgId>/leads/tags",
    "listTags",
    "Tags, by category and name",
    "The organization's tags by category and name.",
)
def index(
    orgId: str,  # the path names it as the API documents it
    category: Annotated[TagCategory | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[Tag]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        page = list_tags(
            uow.connection,
            actor.organization_id,
            category=category.value if category else None,
            limit=limit,
            cursor=cursor,
        )
    return ListEnvelope[Tag](data=[Tag.model_validate(t) for t in page.items], next_cursor=page.next_cursor)


@ops.post(
    "/organizations/<orgId>/leads/tags",
    "createTag",
    "Create a tag",
    "Creates a tag; a name is unique per category (409 TAG_EXISTS).",
    errors={409: ["TAG_EXISTS"]},
    ok={201: {"description": "The tag"}, 409: {"description": "TAG_EXISTS in this category"}},
)
def create(orgId: str, body: Annotated[CreateTagBody, Body()]) -> Response[Envelope[Tag]]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = create_tag(
            uow.connection, actor.organization_id, name=body.name, category=body.category.value, color=body.color
        )
        uow.commit()
    return json_response(201, Envelope[Tag](data=Tag.model_validate(row)))


@ops.patch(
    "/organizations/<orgId>/leads/tags/<tagId>",
    "updateTag",
    "Rename or recolour a tag",
    "Renames or recolours a tag; a name is unique per category (409 TAG_EXISTS).",
    errors={404: ["TAG_NOT_FOUND"], 409: ["TAG_EXISTS"]},
)
def change(orgId: str, tagId: str, body: Annotated[UpdateTagBody, Body()]) -> Envelope[Tag]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = update_tag(
            uow.connection,
            actor.organization_id,
            entity_id(tagId, "TAG_NOT_FOUND"),
            body.model_dump(exclude_unset=True),
        )
        uow.commit()
    return Envelope[Tag](data=Tag.model_validate(row))


@ops.delete(
    "/organizations/<orgId>/leads/tags/<tagId>",
    "deleteTag",
    "Delete a tag (it comes off every lead)",
    "Deletes the tag; it comes off every lead.",
    errors={404: ["TAG_NOT_FOUND"]},
    ok={204: {"description": "Deleted"}},
)
def remove(orgId: str, tagId: str) -> Response[None]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        delete_tag(
            uow.connection, actor.organization_id, entity_id(tagId, "TAG_NOT_FOUND"), actor_user_id=actor.user_id
        )
        uow.commit()
    return Response(status_code=204)


@ops.put(
    "/organizations/<orgId>/leads/<leadId>/tags",
    "setLeadTags",
    "Replace a lead's tags",
    "Replaces the lead's tags with these (tags of this organization; an unknown id is 400 TAG_NOT_FOUND).",
    errors={400: ["TAG_NOT_FOUND"], 404: ["LEAD_NOT_FOUND"]},
)
def replace(orgId: str, leadId: str, body: Annotated[LeadTagsBody, Body()]) -> Envelope[list[Tag]]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        tags = replace_lead_tags(
            uow.connection,
            actor.organization_id,
            entity_id(leadId, "LEAD_NOT_FOUND"),
            body.tag_ids,
            actor_user_id=actor.user_id,
        )
        uow.commit()
    return Envelope[list[Tag]](data=[Tag.model_validate(t) for t in tags])
