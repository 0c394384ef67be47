"""Owner departure and the default assignee (spec section 8 "Deal owner departure").

- `POST /organizations/{orgId}/memberships/{membershipId}/handover` (owner/admin): hands a departed member's
  open deals, leads and tasks to `toUserId`, or the default assignee, in one audited operation.
- `GET` (staff) / `PUT` (owner/admin) `/organizations/{orgId}/default-assignee`: who takes work nobody else
  is named for (a departed member's work on the platform event, unowned returning leads).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.deals.schemas_deals import (
    DefaultAssignee,
    DefaultAssigneeBody,
    DefaultAssigneeEnvelope,
    HandoverBody,
    HandoverEnvelope,
    HandoverOut,
)
from api.http import caller, entity_id
from leadcrm.deals import owner_departure as service
from leadcrm.directory import default_assignee
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()

TAGS = ["Owner departure"]


@router.post(
    "/organizations/<orgId>/memberships/<membershipId>/handover",
    tags=TAGS,
    summary="Hand a departed member's open deals, leads and tasks to another (owner/admin)",
    responses={
        200: {"description": "The handover and what it moved"},
        400: {"description": "ASSIGNEE_NOT_STAFF"},
        404: {"description": "MEMBERSHIP_NOT_FOUND"},
        409: {"description": "MEMBERSHIP_STILL_ACTIVE, NO_ASSIGNEE"},
    },
)
def hand_over(orgId: str, membershipId: str, body: Annotated[HandoverBody, Body()]) -> HandoverEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        membership_id = entity_id(membershipId, "MEMBERSHIP_NOT_FOUND")
        handover = service.hand_over_from_api(uow, actor, membership_id, body.to_user_id)
        uow.commit()
    return HandoverEnvelope(data=HandoverOut.model_validate(handover, from_attributes=True))


@router.get("/organizations/<orgId>/default-assignee", tags=TAGS, summary="The default assignee setting (staff)")
def read_default_assignee(orgId: str) -> DefaultAssigneeEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        user_id = default_assignee.read_default_assignee_setting(uow.connection, actor.organization_id)
    return DefaultAssigneeEnvelope(data=DefaultAssignee(user_id=user_id))


@router.put(
    "/organizations/<orgId>/default-assignee",
    tags=TAGS,
    summary="Set the default assignee (owner/admin)",
    responses={200: {"description": "OK"}, 400: {"description": "ASSIGNEE_NOT_STAFF"}},
)
def set_default_assignee(orgId: str, body: Annotated[DefaultAssigneeBody, Body()]) -> DefaultAssigneeEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        user_id = default_assignee.set_default_assignee(uow, actor, body.user_id)
        uow.commit()
    return DefaultAssigneeEnvelope(data=DefaultAssignee(user_id=user_id))
