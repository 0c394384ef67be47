"""Duplicate merge, undo and pseudonymized erasure (issue 10).

Merging and undoing are staff actions (the spec's lead lifecycle belongs to the CRM's staff gate);
pseudonymizing, like erasing, is owner/admin. A lead or merge of another organization answers 404 exactly
like a random id, so a merge across organizations is a 404.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id
from api.operations import MANAGER, Operations
from api.qualification.schemas_qualification import (
    Merge,
    MergeBody,
    MergeDone,
    MergeSuggestion,
    Pseudonymized,
    UndoDone,
)
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.qualification import merge_undo, pseudonymize, queries
from leadcrm.qualification import merges as service

router = APIGatewayHttpRouter()
ops = Operations(router, "Qualification")

LEAD = "/organizations/<orgId>/leads/<leadId>"
MERGE = "/organizations/<orgId>/lead-merges/<mergeId>"


@ops.post(
    f"{LEAD}/merge",
    "mergeLeads",
    "Merge a duplicate (mergedLeadId) into this lead, the survivor",
    "Everything the duplicate owns moves to the survivor; empty survivor fields are filled from it; the "
        "survivor keeps one open follow-up task. The duplicate's id then answers GET …/leads/{id} with the "
        "survivor (meta.redirectedFrom). 409 MERGED_LEAD_CONVERTED, LEAD_PSEUDONYMIZED; 400 MERGE_SAME_LEAD.",
    errors={
        400: ["MERGE_SAME_LEAD"],
        404: ["LEAD_NOT_FOUND"],
        409: ["MERGE_POLICY_MISSING", "MERGED_LEAD_CONVERTED", "LEAD_PSEUDONYMIZED"],
    },
)
def merge(orgId: str, leadId: str, body: Annotated[MergeBody, Body()]) -> Envelope[MergeDone]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        done = service.merge_leads(uow, actor, entity_id(leadId, "LEAD_NOT_FOUND"), body.merged_lead_id)
        uow.commit()
    return Envelope[MergeDone](
        data=MergeDone(
            merge_id=done.merge_id,
            survivor_id=done.survivor_id,
            merged_id=done.merged_id,
            merged_at=done.merged_at,
            moved=done.moved,
            filled=done.filled,
        )
    )


@ops.get(
    f"{LEAD}/merge-suggestions",
    "listMergeSuggestions",
    "Leads that are the same person by the identity rules, and the suggested survivor",
    (
        "Leads of this organization that are the same person by the identity rules (email, phone), each with the "
        "suggested survivor."
    ),
    errors={404: ["LEAD_NOT_FOUND"]},
)
def suggestions(orgId: str, leadId: str) -> Envelope[MergeSuggestion]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        found = queries.merge_suggestions(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    return Envelope[MergeSuggestion](data=MergeSuggestion.model_validate(found))


@ops.get(
    f"{LEAD}/merges",
    "listLeadMerges",
    "The merges this lead survived, newest first",
    "The merges this lead survived, newest first.",
    errors={404: ["LEAD_NOT_FOUND"]},
)
def lead_merges(orgId: str, leadId: str) -> ListEnvelope[Merge]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = queries.merges_of(uow.connection, actor.organization_id, entity_id(leadId, "LEAD_NOT_FOUND"))
    # The few merges one lead survived: answered whole, nextCursor null as every list has one.
    return ListEnvelope[Merge](data=[Merge.model_validate(r) for r in rows], next_cursor=None)


@ops.get(
    MERGE,
    "getLeadMerge",
    "A merge: who, when, the rows it moved, and its undo report",
    "Who merged, when, the rows the merge moved and, once undone, its undo report.",
    errors={404: ["MERGE_NOT_FOUND"]},
)
def read_merge(orgId: str, mergeId: str) -> Envelope[Merge]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = queries.get_merge(uow.connection, actor.organization_id, entity_id(mergeId, "MERGE_NOT_FOUND"))
    return Envelope[Merge](data=Merge.model_validate(row))


@ops.post(
    f"{MERGE}/undo",
    "undoLeadMerge",
    "Undo a merge within 7 days: both leads as they were",
    "Rows that reached the survivor since the merge stay with it and are listed in "
        "report.stayedWithSurvivor. 409 MERGE_ALREADY_UNDONE, MERGE_UNDO_WINDOW_PASSED, SURVIVOR_MERGED_SINCE.",
    errors={
        404: ["MERGE_NOT_FOUND"],
        409: ["MERGE_ALREADY_UNDONE", "MERGE_UNDO_WINDOW_PASSED", "SURVIVOR_MERGED_SINCE", "MERGE_SNAPSHOT_GONE"],
    },
)
def undo(orgId: str, mergeId: str) -> Envelope[UndoDone]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        done = merge_undo.undo_merge(uow, actor, entity_id(mergeId, "MERGE_NOT_FOUND"))
        uow.commit()
    return Envelope[UndoDone](
        data=UndoDone(
            merge_id=done.merge_id, survivor_id=done.survivor_id, restored_id=done.restored_id, report=done.report
        )
    )


@ops.post(
    f"{LEAD}/pseudonymize",
    "pseudonymizeLead",
    "Erase the person but keep the record: personal data replaced by keyed tokens",
    (
        "Replaces the person's details with keyed tokens and archives the lead, keeping it for analytics; dedup still "
        "recognises the tokens. Without a configured key it is 503 and nothing changes."
    ),
    who=MANAGER,
    errors={404: ["LEAD_NOT_FOUND"], 409: ["ALREADY_PSEUDONYMIZED"], 503: ["PSEUDONYMIZATION_NOT_CONFIGURED"]},
)
def pseudonymize_lead(orgId: str, leadId: str) -> Envelope[Pseudonymized]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        done = pseudonymize.pseudonymize_lead(uow, actor, entity_id(leadId, "LEAD_NOT_FOUND"))
        uow.commit()
    return Envelope[Pseudonymized](data=Pseudonymized.model_validate(done))
