"""Reading leads (staff): `GET /organizations/{orgId}/leads` and `GET …/leads/{leadId}`."""

from __future__ import annotations

import uuid
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.fields import QueryText
from api.http import auth_subject, entity_id, gate_before_rules, organization_id
from api.lead_versions import lead_response
from api.leads.schemas_lead_reads import LeadDetail, LeadListItem
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, AssigneeParam, CursorParam, PageSize, assignee_for_member_read
from api.qualification.schemas_qualification import LeadDetailOrRedirect, MergedRedirect
from api.schemas import ListEnvelope
from leadcrm.directory.access import require_staff
from leadcrm.leads.queries import get_lead, get_lead_as_member, list_leads_as_member
from leadcrm.leads.rules.listing import (
    MAX_STAGE_IDS,
    MAX_TAG_IDS,
    SEARCH_MAX_LENGTH,
    SEARCH_MIN_LENGTH,
    ArchivedFilter,
    LeadListFilters,
    LeadSort,
    SortOrder,
    decode_cursor,
    parse_search,
    unique,
)
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import NotFound
from leadcrm.qualification.queries import survivor_of

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

# Repeated values count once; the bound only stops absurd query strings.
MAX_STATUSES = 2 * len(StageCategory)


@ops.get(
    "/organizations/<orgId>/leads/<leadId>",
    "getLead",
    "A lead with its pipelines and timeline",
    (
        "The lead with its pipeline placements, tags and one timeline of everything that happened to it. A lead merged "
        "into another answers the survivor, with `meta.redirectedFrom`."
    ),
    errors={404: ["LEAD_NOT_FOUND"]},
)
def read(orgId: str, leadId: str) -> Response[LeadDetailOrRedirect]:
    """A merged lead's id answers with its survivor, and `meta.redirectedFrom` names the id asked for (the
    tombstone is looked up only when no lead has the id, so a plain read costs nothing more). The membership
    check rides in the lead's statement."""
    subject, org = auth_subject(router), organization_id(orgId)
    with UnitOfWork() as uow:
        with gate_before_rules(uow, router, orgId, require_staff):
            lead_id = entity_id(leadId, "LEAD_NOT_FOUND")
        actor, lead = get_lead_as_member(uow.connection, subject, org, lead_id, gate=require_staff)
        if lead is not None:
            return lead_response(200, LeadDetailOrRedirect(data=LeadDetail.model_validate(lead)), lead)
        tombstone = survivor_of(uow.connection, actor.organization_id, lead_id)
        if tombstone is None:
            raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
        lead = get_lead(uow.connection, actor.organization_id, tombstone["survivor_id"])
    redirect = MergedRedirect(redirected_from=lead_id, merge_id=tombstone["merge_id"], merged_at=tombstone["merged_at"])
    return lead_response(200, LeadDetailOrRedirect(data=LeadDetail.model_validate(lead), meta=redirect), lead)


@ops.get(
    "/organizations/<orgId>/leads",
    "listLeads",
    "Leads, filtered and sorted, in keyset pages",
    "Filters combine with AND. `status`, `stageIds` and `tags` take several values (comma-separated or "
    "repeated). `tags` lists leads having ANY of the tags. `stageIds` with `pipelineId` filters on the "
    "lead's effective stage in that pipeline (its secondary placement's stage, else its primary stage "
    "when that pipeline is its primary one); without `pipelineId`, on the primary stage. `assignee` is "
    "`me` (the caller), `unassigned` or a user id. `search` matches name and "
    "email case-insensitively, and the phone's digits when the term has 3 digits or more, whichever way "
    "either was written (`+972501234567` finds `050-1234567` and the reverse; national numbers are read in "
    "the organization's phone region, see `GET …/settings`). `nextCursor` "
    "is valid only with the sort and order it was issued for.",
)
def index(
    orgId: str,  # the path names it as the API documents it
    status: Annotated[list[StageCategory] | None, Query(max_length=MAX_STATUSES)] = None,
    pipelineId: Annotated[uuid.UUID | None, Query()] = None,
    stageIds: Annotated[list[uuid.UUID] | None, Query(max_length=MAX_STAGE_IDS)] = None,
    tags: Annotated[list[uuid.UUID] | None, Query(max_length=MAX_TAG_IDS)] = None,
    campaignId: Annotated[uuid.UUID | None, Query()] = None,
    archived: Annotated[ArchivedFilter, Query()] = ArchivedFilter.LIVE,
    assignee: AssigneeParam = None,
    isTest: Annotated[bool | None, Query()] = None,
    search: Annotated[QueryText | None, Query(min_length=SEARCH_MIN_LENGTH, max_length=SEARCH_MAX_LENGTH)] = None,
    sort: Annotated[LeadSort, Query()] = LeadSort.CREATED_AT,
    order: Annotated[SortOrder, Query()] = SortOrder.DESC,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[LeadListItem]:
    subject, org = auth_subject(router), organization_id(orgId)
    with UnitOfWork() as uow:
        with gate_before_rules(uow, router, orgId, require_staff):
            assignee_filter, assigned_to_caller = assignee_for_member_read(assignee)
            filters = LeadListFilters(
                statuses=tuple(s.value for s in unique(status)),
                pipeline_id=pipelineId,
                stage_ids=unique(stageIds),
                tag_ids=unique(tags),
                campaign_id=campaignId,
                archived=archived,
                assignee=assignee_filter,
                assigned_to_caller=assigned_to_caller,
                is_test=isTest,
                search=parse_search(search),
                sort=sort,
                order=order,
                limit=limit,
                after=decode_cursor(cursor, sort, order) if cursor is not None else None,
            )
        _, page = list_leads_as_member(uow.connection, subject, org, filters, gate=require_staff)
    return ListEnvelope[LeadListItem](
        data=[LeadListItem.model_validate(item) for item in page.items], next_cursor=page.next_cursor
    )
