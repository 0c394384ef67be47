"""Converting and linking leads to members (owner/admin), and link candidates (staff).

A lead of another organization answers 404 LEAD_NOT_FOUND exactly like a random id; a membership of
another organization 404 MEMBERSHIP_NOT_FOUND.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.fields import QueryText
from api.http import caller, entity_id
from api.lead_versions import IfMatch, check_version
from api.leads.schemas_conversion import (
    SEARCH_MAX_LENGTH,
    SEARCH_MIN_LENGTH,
    AttachedOutcome,
    ConvertBody,
    ConvertedOutcome,
    ExistingMember,
    ExistingMemberOutcome,
    LinkCandidate,
    LinkCandidates,
    LinkMemberBody,
)
from api.operations import MANAGER, Operations
from api.schemas import Envelope
from leadcrm.directory.access import require_staff
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.directory.rules import Role
from leadcrm.leads import conversion as service
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

LEAD = "/organizations/<orgId>/leads/<leadId>"
SALES_WORKSPACE_LEAD = "/organizations/<orgId>/sales-workspace/leads/<leadId>"


def _lead_id(raw: str) -> uuid.UUID:
    return entity_id(raw, "LEAD_NOT_FOUND")


@ops.post(
    f"{LEAD}/convert",
    "convertLead",
    "Convert the lead into a member",
    "Creates the membership (and the user when the email has none) and answers `outcome: converted`. "
        "When the email is an active member's already, nothing is written and the answer is "
        "`outcome: existing_member` naming them: link-member is the write.",
    who=MANAGER,
    errors={
        400: [
            "ALREADY_A_MEMBER",
            "ASSIGNEE_NOT_STAFF",
            "LEAD_ALREADY_CONVERTED",
            "LEAD_NEEDS_CONTACT",
            "NO_STAGE_FOR_STATUS",
            "USER_CREATE_RACE",
        ],
        404: ["LEAD_NOT_FOUND", "STAGE_NOT_FOUND"],
    },
)
def convert(
    orgId: str, leadId: str, body: Annotated[ConvertBody, Body()], if_match: IfMatch = None
) -> Envelope[ConvertedOutcome | ExistingMemberOutcome]:
    command = service.ConvertCommand(
        first_name=body.first_name, last_name=body.last_name, email=str(body.email), role=Role(body.role.value)
    )
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.CONVERT)(caller(uow, router, orgId))
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, body.version)
        result = service.convert_lead(uow, actor, lead_id, command)
        uow.commit()
    if isinstance(result, service.ExistingMember):
        member = ExistingMember(
            membership_id=result.membership_id, first_name=result.first_name, last_name=result.last_name
        )
        return Envelope[ConvertedOutcome | ExistingMemberOutcome](data=ExistingMemberOutcome(existing_member=member))
    return Envelope[ConvertedOutcome | ExistingMemberOutcome](
        data=ConvertedOutcome(
            membership_id=result.membership_id,
            user_id=result.user_id,
            role=result.role.value,
            status=result.status.value,
        )
    )


@ops.post(
    f"{LEAD}/link-member",
    "linkLeadToMember",
    "Link the lead to an existing active member",
    "Links the lead to an existing active member: the lead is converted without creating a membership.",
    who=MANAGER,
    errors={
        400: [
            "ASSIGNEE_NOT_STAFF",
            "LEAD_ALREADY_CONVERTED",
            "LEAD_NEEDS_CONTACT",
            "MEMBER_NOT_ACTIVE",
            "NO_STAGE_FOR_STATUS",
        ],
        404: ["LEAD_NOT_FOUND", "MEMBERSHIP_NOT_FOUND", "STAGE_NOT_FOUND"],
    },
)
def link_member(
    orgId: str, leadId: str, body: Annotated[LinkMemberBody, Body()], if_match: IfMatch = None
) -> Envelope[AttachedOutcome]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.LINK_MEMBER)(caller(uow, router, orgId))
        lead_id = _lead_id(leadId)
        check_version(uow, actor.organization_id, lead_id, if_match, body.version)
        membership_id = service.link_lead_to_member(uow, actor, lead_id, body.membership_id)
        uow.commit()
    return Envelope[AttachedOutcome](data=AttachedOutcome(membership_id=membership_id))


SearchText = Annotated[QueryText | None, Query(min_length=SEARCH_MIN_LENGTH, max_length=SEARCH_MAX_LENGTH)]
CANDIDATES_DESCRIPTION = (
    "Without `search`: active members sharing the lead's email or phone (`matchedBy` email first, then phone). "
    "With `search`: up to 20 active members where every term hits first name, last name, email or phone "
    "(a term with 4+ digits also matches the phone's digits, trunk zero dropped); `matchedBy: search`. "
    "A converted lead always gets an empty list."
)


@ops.get(
    f"{LEAD}/link-candidates",
    "listLinkCandidates",
    "Members the lead may be",
    CANDIDATES_DESCRIPTION,
    errors={404: ["LEAD_NOT_FOUND"]},
)
def link_candidates(orgId: str, leadId: str, search: SearchText = None) -> Envelope[LinkCandidates]:
    return _candidates(orgId, leadId, search)


@ops.get(
    f"{SALES_WORKSPACE_LEAD}/link-candidates",
    "listSalesWorkspaceLinkCandidates",
    "Members the lead may be (Sales workspace)",
    CANDIDATES_DESCRIPTION,
    errors={404: ["LEAD_NOT_FOUND"]},
)
def sales_workspace_link_candidates(orgId: str, leadId: str, search: SearchText = None) -> Envelope[LinkCandidates]:
    return _candidates(orgId, leadId, search)


def _candidates(orgId: str, leadId: str, search: str | None) -> Envelope[LinkCandidates]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = service.link_candidates_for_lead(uow.connection, actor.organization_id, _lead_id(leadId), search)
    return Envelope[LinkCandidates](data=LinkCandidates(candidates=[LinkCandidate.model_validate(r) for r in rows]))
