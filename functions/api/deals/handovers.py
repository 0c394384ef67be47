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
from api.operations import MANAGER, Operations
from leadcrm.deals import owner_departure as service
from leadcrm.directory import default_assignee
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Deals")


@ops.post(
    "/organizations/<orgId>/memberships/<membershipId>/handover",
    "handOverMembership",
    "Hand a departed member's open deals, leads and tasks to another",
    (
        "Hands a departed (no longer active) member's open deals, leads and tasks to another active staff member, or "
        "to the default assignee."
    ),
    who=MANAGER,
    errors={
        400: ["ASSIGNEE_NOT_STAFF"],
        404: ["MEMBERSHIP_NOT_FOUND"],
        409: ["MEMBERSHIP_STILL_ACTIVE", "NO_ASSIGNEE"],
    },
    ok={
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


@ops.get(
    "/organizations/<orgId>/default-assignee",
    "getDefaultAssignee",
    "The default assignee setting",
    "Who gets the leads, deals and tasks of a member who leaves, when no one else is named.",
)
def read_default_assignee(orgId: str) -> DefaultAssigneeEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        user_id = default_assignee.read_default_assignee_setting(uow.connection, actor.organization_id)
    return DefaultAssigneeEnvelope(data=DefaultAssignee(user_id=user_id))


@ops.put(
    "/organizations/<orgId>/default-assignee",
    "setDefaultAssignee",
    "Set the default assignee",
    "Sets the default assignee to an active staff member, or clears it with null.",
    who=MANAGER,
    errors={400: ["ASSIGNEE_NOT_STAFF"]},
    ok={200: {"description": "OK"}, 400: {"description": "ASSIGNEE_NOT_STAFF"}},
)
def set_default_assignee(orgId: str, body: Annotated[DefaultAssigneeBody, Body()]) -> DefaultAssigneeEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        user_id = default_assignee.set_default_assignee(uow, actor, body.user_id)
        uow.commit()
    return DefaultAssigneeEnvelope(data=DefaultAssignee(user_id=user_id))
