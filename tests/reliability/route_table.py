"""One row per API route: who may call it, what a valid request looks like, and what it answers.

The authorization matrix (test_authorization_matrix.py) calls every row as every kind of caller, on the
organization's own ids and on another organization's; test_every_route_has_a_row fails when a route is
served without a row here. Adding a route is adding its row:

    "POST /organizations/{orgId}/deals": Row(STAFF, 201, lambda w: Req(body={"title": "Deal"}), foreign=None),

- the key is `METHOD path` exactly as the OpenAPI document spells it;
- the gate: PUBLIC (no token needed), MEMBER (any active member of an organization with lead management),
  STAFF (owner, admin, coach), MANAGER (owner, admin);
- `ok`: the status a permitted caller gets for a valid request on its own organization's ids;
- `request(world)`: the path ids (other than orgId), body and query of a valid request, built from the
  organization `world` (its makers create fresh entities through the API, so a request that deletes or
  closes something never disturbs the next one). For the "another organization's ids" column the same
  builder runs on the other organization while the path keeps the caller's orgId;
- `foreign`: what a permitted caller gets with another organization's ids (404 like a random id), or None
  when the request carries no ids (then it answers `ok`). Whatever it answers, the other organization's
  rows must be unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tests.support.reliability_helpers import OrgWorld, in_days


class Gate(StrEnum):
    PUBLIC = "public"
    MEMBER = "member"
    STAFF = "staff"
    MANAGER = "manager"


PUBLIC, MEMBER, STAFF, MANAGER = Gate.PUBLIC, Gate.MEMBER, Gate.STAFF, Gate.MANAGER


@dataclass(frozen=True)
class Req:
    path: dict[str, str] = field(default_factory=dict)
    body: Any = None
    query: dict[str, str] | None = None
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class Row:
    gate: Gate
    ok: int
    request: Callable[[OrgWorld], Req] = lambda w: Req()
    foreign: int | None = 404
    # A permitted caller whose answer is not `ok` / `foreign`, by rule: e.g. a member reading a ticket that is
    # not theirs (404), a coach taking over an escalated ticket (403). "caller" for both columns, "caller/own"
    # for the organization's own ids only.
    callers: dict[str, tuple[int, str]] = field(default_factory=dict)


def _lead(w: OrgWorld) -> Req:
    return Req({"leadId": w.lead()})


def _task(w: OrgWorld) -> Req:
    return Req({"taskId": w.task()})


def _placement(w: OrgWorld, body: Callable[[OrgWorld, str], Any] | None = None) -> Req:
    lead_id, pipeline_id = w.placement()
    return Req({"leadId": lead_id, "pipelineId": pipeline_id}, body=body(w, pipeline_id) if body else None)


def _move_placement(w: OrgWorld) -> Req:
    return _placement(w, lambda w, pipeline_id: {"stageId": w.stage_of(pipeline_id, "contacted")})


def _set_primary(w: OrgWorld) -> Req:
    return _placement(w, lambda w, pipeline_id: {})


def _reorder(w: OrgWorld) -> Req:
    pipeline_id = w.pipeline()
    stage_ids = [s["id"] for s in w.stages(pipeline_id)]
    return Req({"pipelineId": pipeline_id}, body={"stageIds": list(reversed(stage_ids))})


def _stage(w: OrgWorld, body: Any = None) -> Req:
    pipeline_id = w.pipeline()
    return Req({"pipelineId": pipeline_id, "stageId": w.extra_stage(pipeline_id)}, body=body)


ROUTES: dict[str, Row] = {
    # -- capture (public) ------------------------------------------------------------------------------
    "POST /leads/organization/{orgId}": Row(
        PUBLIC, 201, lambda w: Req(body={"email": f"{uuid.uuid4().hex}@example.com"}), foreign=None
    ),
    # -- leads -----------------------------------------------------------------------------------------
    "GET /organizations/{orgId}/leads": Row(STAFF, 200, foreign=None),
    "POST /organizations/{orgId}/leads": Row(STAFF, 201, lambda w: Req(body={"name": "Matrix Lead"}), foreign=None),
    "GET /organizations/{orgId}/leads/{leadId}": Row(STAFF, 200, _lead),
    "PATCH /organizations/{orgId}/leads/{leadId}": Row(
        STAFF, 200, lambda w: Req({"leadId": w.lead()}, body={"name": "Renamed"})
    ),
    "DELETE /organizations/{orgId}/leads/{leadId}": Row(MANAGER, 204, _lead),
    "POST /organizations/{orgId}/leads/bulk-erase": Row(
        MANAGER, 200, lambda w: Req(body={"leadIds": [w.lead()]}), foreign=200
    ),
    "GET /organizations/{orgId}/leads/queue": Row(STAFF, 200, foreign=None),
    # -- moves, archive, placements ----------------------------------------------------------------------
    "POST /organizations/{orgId}/leads/bulk-move-stage": Row(
        STAFF,
        200,
        lambda w: Req(body={"stageId": w.stage_of(w.default_pipeline(), "contacted"), "leadIds": [w.lead()]}),
    ),
    "POST /organizations/{orgId}/leads/bulk-archive": Row(
        STAFF, 200, lambda w: Req(body={"leadIds": [w.lead()], "archived": True}), foreign=200
    ),
    "POST /organizations/{orgId}/leads/{leadId}/archive": Row(STAFF, 200, _lead),
    "POST /organizations/{orgId}/leads/{leadId}/unarchive": Row(STAFF, 200, _lead),
    "POST /organizations/{orgId}/leads/{leadId}/pipelines": Row(
        STAFF, 201, lambda w: Req({"leadId": w.lead()}, body={"pipelineId": w.pipeline()})
    ),
    "POST /organizations/{orgId}/leads/{leadId}/pipelines/{pipelineId}/set-primary": Row(STAFF, 200, _set_primary),
    "PATCH /organizations/{orgId}/leads/{leadId}/pipelines/{pipelineId}": Row(STAFF, 200, _move_placement),
    "DELETE /organizations/{orgId}/leads/{leadId}/pipelines/{pipelineId}": Row(STAFF, 204, _placement),
    # -- follow-ups, touches, reopen -----------------------------------------------------------------------
    "PUT /organizations/{orgId}/leads/{leadId}/follow-up": Row(
        STAFF, 200, lambda w: Req({"leadId": w.lead()}, body={"at": in_days(2), "type": "call"})
    ),
    "DELETE /organizations/{orgId}/leads/{leadId}/follow-up": Row(
        STAFF, 200, lambda w: Req({"leadId": w.lead_with_follow_up()})
    ),
    "POST /organizations/{orgId}/leads/{leadId}/touches": Row(
        STAFF, 200, lambda w: Req({"leadId": w.lead()}, body={"channel": "call", "outcome": "no_answer"})
    ),
    "POST /organizations/{orgId}/leads/{leadId}/reopen": Row(STAFF, 200, lambda w: Req({"leadId": w.lead()}, body={})),
    # -- conversion ----------------------------------------------------------------------------------------
    "POST /organizations/{orgId}/leads/{leadId}/convert": Row(
        MANAGER,
        200,
        lambda w: Req({"leadId": w.lead()}, body={"firstName": "Ada", "email": f"ada.{uuid.uuid4().hex}@example.com"}),
    ),
    "POST /organizations/{orgId}/leads/{leadId}/link-member": Row(
        MANAGER, 200, lambda w: Req({"leadId": w.lead()}, body={"membershipId": w.new_member_membership()})
    ),
    "GET /organizations/{orgId}/leads/{leadId}/link-candidates": Row(STAFF, 200, _lead),
    "GET /organizations/{orgId}/sales-workspace/leads/{leadId}/link-candidates": Row(STAFF, 200, _lead),
    # -- the Sales workspace (a new lead is at version 1) ------------------------------------------------------
    "PUT /organizations/{orgId}/sales-workspace/leads/{leadId}/stage": Row(
        STAFF,
        200,
        lambda w: Req(
            {"leadId": w.lead()}, body={"version": 1, "stageId": w.stage_of(w.default_pipeline(), "contacted")}
        ),
    ),
    "POST /organizations/{orgId}/sales-workspace/leads/{leadId}/results": Row(
        STAFF, 200, lambda w: Req({"leadId": w.lead()}, body={"version": 1, "outcome": "no_answer", "note": "rang"})
    ),
    "GET /organizations/{orgId}/sales-workspace/access/me": Row(MEMBER, 200, foreign=None),
    # -- tags and campaigns ----------------------------------------------------------------------------------
    "GET /organizations/{orgId}/leads/tags": Row(STAFF, 200, foreign=None),
    "POST /organizations/{orgId}/leads/tags": Row(
        STAFF, 201, lambda w: Req(body={"name": f"Tag {uuid.uuid4().hex[:8]}"}), foreign=None
    ),
    "PATCH /organizations/{orgId}/leads/tags/{tagId}": Row(
        STAFF, 200, lambda w: Req({"tagId": w.tag()}, body={"color": "#112233"})
    ),
    "DELETE /organizations/{orgId}/leads/tags/{tagId}": Row(STAFF, 204, lambda w: Req({"tagId": w.tag()})),
    "PUT /organizations/{orgId}/leads/{leadId}/tags": Row(
        STAFF, 200, lambda w: Req({"leadId": w.lead()}, body={"tagIds": [w.tag()]})
    ),
    "GET /organizations/{orgId}/leads/campaigns": Row(STAFF, 200, foreign=None),
    "POST /organizations/{orgId}/leads/campaigns": Row(
        STAFF, 201, lambda w: Req(body={"name": "Campaign"}), foreign=None
    ),
    "PATCH /organizations/{orgId}/leads/campaigns/{campaignId}": Row(
        STAFF, 200, lambda w: Req({"campaignId": w.campaign()}, body={"archived": True})
    ),
    # -- pipelines -------------------------------------------------------------------------------------------
    "GET /organizations/{orgId}/pipelines": Row(STAFF, 200, foreign=None),
    "POST /organizations/{orgId}/pipelines": Row(MANAGER, 201, lambda w: Req(body={"name": "Pipe"}), foreign=None),
    "GET /organizations/{orgId}/pipelines/{pipelineId}": Row(STAFF, 200, lambda w: Req({"pipelineId": w.pipeline()})),
    "PATCH /organizations/{orgId}/pipelines/{pipelineId}": Row(
        MANAGER, 200, lambda w: Req({"pipelineId": w.pipeline()}, body={"name": "Renamed"})
    ),
    "POST /organizations/{orgId}/pipelines/{pipelineId}/archive": Row(
        MANAGER, 200, lambda w: Req({"pipelineId": w.pipeline()})
    ),
    "POST /organizations/{orgId}/pipelines/{pipelineId}/stages": Row(
        MANAGER, 201, lambda w: Req({"pipelineId": w.pipeline()}, body={"name": "Stage", "category": "contacted"})
    ),
    "PUT /organizations/{orgId}/pipelines/{pipelineId}/stages/order": Row(MANAGER, 200, _reorder),
    "PATCH /organizations/{orgId}/pipelines/{pipelineId}/stages/{stageId}": Row(
        MANAGER, 200, lambda w: _stage(w, body={"name": "Renamed stage"})
    ),
    "POST /organizations/{orgId}/pipelines/{pipelineId}/stages/{stageId}/archive": Row(MANAGER, 200, _stage),
    # -- tasks -------------------------------------------------------------------------------------------------
    "GET /organizations/{orgId}/tasks": Row(STAFF, 200, foreign=None),
    "POST /organizations/{orgId}/tasks": Row(STAFF, 201, lambda w: Req(body={"title": "Call back"}), foreign=None),
    "PATCH /organizations/{orgId}/tasks/{taskId}": Row(
        STAFF, 200, lambda w: Req({"taskId": w.task()}, body={"title": "Renamed"})
    ),
    "POST /organizations/{orgId}/tasks/{taskId}/complete": Row(STAFF, 200, _task),
    "POST /organizations/{orgId}/tasks/{taskId}/cancel": Row(STAFF, 200, _task),
    # -- urgent prompt (every member; members see show: false) ------------------------------------------------
    "GET /organizations/{orgId}/urgent-prompt": Row(MEMBER, 200, foreign=None),
    "POST /organizations/{orgId}/urgent-prompt/seen": Row(MEMBER, 200, foreign=None),
    "POST /organizations/{orgId}/urgent-prompt/snooze": Row(
        MEMBER, 200, lambda w: Req(body={"until": "one_hour"}), foreign=None
    ),
}


def _deal(w: OrgWorld, body: Callable[[OrgWorld, dict[str, Any]], Any] | None = None) -> Req:
    deal = w.deal()
    return Req({"dealId": deal["id"]}, body=body(w, deal) if body else None)


def _deal_stage(w: OrgWorld) -> Req:
    stage = next(s for s in w.deal_pipeline()["stages"] if s["kind"] == "discovery")
    return Req({"stageId": stage["id"]}, body={"probability": 25})


def _deal_stage_order(w: OrgWorld) -> Req:
    """Two discovery stages swapped (stages stay in phase order; within a phase any order)."""
    w.second_deal_stage()
    ids = [s["id"] for s in w.deal_pipeline()["stages"]]
    kinds = [s["kind"] for s in w.deal_pipeline()["stages"]]
    first = kinds.index("discovery")
    ids[first], ids[first + 1] = ids[first + 1], ids[first]
    return Req(body={"stageIds": ids})


def _ticket(status: str, body: Any = None) -> Callable[[OrgWorld], Req]:
    return lambda w: Req({"ticketId": w.ticket(status)}, body=body)


def _template_sync(w: OrgWorld) -> Req:
    """A sync needs a connected number (its token reads the templates): the organization gets one."""
    w.connection("whatsapp")
    return Req(body={"businessAccountId": "102290129340398"})


def _conversation(body: Any = None) -> Callable[[OrgWorld], Req]:
    return lambda w: Req({"conversationId": w.conversation()}, body=body)


# A member sees and opens only their own tickets: a staff-made ticket reads like a random id to them, and a
# body naming a lead is staff's business.
NOT_THEIRS = {"member": (404, "TICKET_NOT_FOUND")}
STAFF_BODY = {"member": (403, "STAFF_ONLY")}
HIGHER_TIER = {"coach/own": (403, "TICKET_HIGHER_TIER_ONLY")}
# A coach names their own availability with our ids; another organization's coach is someone else.
OWN_AVAILABILITY = {"coach/foreign": (403, "OWN_AVAILABILITY_ONLY")}

ROUTES.update(
    {
        # -- ingestion: connections (owner/admin), CSV import (staff) ----------------------------------------
        "POST /organizations/{orgId}/integrations/meta": Row(
            MANAGER,
            201,
            lambda w: Req(body={"pageId": str(uuid.uuid4().int)[:16], "accessToken": "page-token-1234"}),
            foreign=None,
        ),
        "GET /organizations/{orgId}/integrations/meta": Row(MANAGER, 200, foreign=None),
        "DELETE /organizations/{orgId}/integrations/meta/{connectionId}": Row(
            MANAGER, 200, lambda w: Req({"connectionId": w.connection("meta")})
        ),
        "GET /organizations/{orgId}/integrations/meta/{connectionId}/crm-events": Row(
            MANAGER, 200, lambda w: Req({"connectionId": w.connection("meta")})
        ),
        "PUT /organizations/{orgId}/integrations/meta/{connectionId}/crm-events": Row(
            MANAGER,
            200,
            lambda w: Req(
                {"connectionId": w.connection("meta")},
                body={
                    "datasetId": "1234567890123456",
                    "enabled": True,
                    "stageEventNames": {w.stage_of(w.default_pipeline(), "contacted"): "Qualified Lead"},
                },
            ),
        ),
        "POST /organizations/{orgId}/integrations/whatsapp": Row(
            MANAGER,
            201,
            lambda w: Req(body={"phoneNumberId": str(uuid.uuid4().int)[:16], "accessToken": "waba-token-1234"}),
            foreign=None,
        ),
        "GET /organizations/{orgId}/integrations/whatsapp": Row(MANAGER, 200, foreign=None),
        "DELETE /organizations/{orgId}/integrations/whatsapp/{connectionId}": Row(
            MANAGER, 200, lambda w: Req({"connectionId": w.connection("whatsapp")})
        ),
        "POST /organizations/{orgId}/webhook-subscriptions": Row(
            MANAGER,
            201,
            lambda w: Req(body={"url": "https://93.184.216.34/hook", "eventTypes": ["lead.created"]}),
            foreign=None,
        ),
        "GET /organizations/{orgId}/webhook-subscriptions": Row(MANAGER, 200, foreign=None),
        "GET /organizations/{orgId}/webhook-subscriptions/{subscriptionId}": Row(
            MANAGER, 200, lambda w: Req({"subscriptionId": w.webhook_subscription()})
        ),
        "PATCH /organizations/{orgId}/webhook-subscriptions/{subscriptionId}": Row(
            MANAGER, 200, lambda w: Req({"subscriptionId": w.webhook_subscription()}, body={"enabled": False})
        ),
        "DELETE /organizations/{orgId}/webhook-subscriptions/{subscriptionId}": Row(
            MANAGER, 204, lambda w: Req({"subscriptionId": w.webhook_subscription()})
        ),
        "POST /organizations/{orgId}/webhook-subscriptions/{subscriptionId}/rotate-secret": Row(
            MANAGER, 200, lambda w: Req({"subscriptionId": w.webhook_subscription()})
        ),
        "GET /organizations/{orgId}/webhook-subscriptions/{subscriptionId}/deliveries": Row(
            MANAGER, 200, lambda w: Req({"subscriptionId": w.webhook_delivery()[0]})
        ),
        "POST /organizations/{orgId}/webhook-subscriptions/{subscriptionId}/deliveries/{deliveryId}/replay": Row(
            MANAGER, 202, lambda w: Req(dict(zip(("subscriptionId", "deliveryId"), w.webhook_delivery(), strict=True)))
        ),
        "POST /organizations/{orgId}/leads/import": Row(
            STAFF, 201, lambda w: Req(body={"fileName": "leads.csv"}), foreign=None
        ),
        "GET /organizations/{orgId}/leads/import": Row(STAFF, 200, foreign=None),
        "GET /organizations/{orgId}/leads/import/{jobId}": Row(STAFF, 200, lambda w: Req({"jobId": w.import_job()})),
        "GET /organizations/{orgId}/leads/import/{jobId}/rows": Row(
            STAFF, 200, lambda w: Req({"jobId": w.import_job()})
        ),
        "POST /organizations/{orgId}/leads/import/{jobId}/start": Row(
            STAFF, 202, lambda w: Req({"jobId": w.import_job(uploaded=True)})
        ),
        # -- conversations, consent, bulk email (staff); unsubscribe (public, signed token) ----------------------
        "GET /organizations/{orgId}/conversations": Row(STAFF, 200, foreign=None),
        "POST /organizations/{orgId}/conversations": Row(
            STAFF, 201, lambda w: Req(body={"leadId": w.emailable_lead(), "subject": "Hi", "body": "Welcome!"})
        ),
        "GET /organizations/{orgId}/conversations/{conversationId}": Row(STAFF, 200, _conversation()),
        "PATCH /organizations/{orgId}/conversations/{conversationId}": Row(
            STAFF, 200, _conversation({"status": "closed"})
        ),
        "GET /organizations/{orgId}/conversations/{conversationId}/messages": Row(STAFF, 200, _conversation()),
        "POST /organizations/{orgId}/conversations/{conversationId}/messages": Row(
            STAFF, 201, _conversation({"body": "A follow-up"})
        ),
        "POST /organizations/{orgId}/conversations/{conversationId}/whatsapp-messages": Row(
            STAFF, 201, lambda w: Req({"conversationId": w.whatsapp_thread()}, body={"text": "See you at 18:00"})
        ),
        "GET /organizations/{orgId}/whatsapp-templates": Row(STAFF, 200, foreign=None),
        "POST /organizations/{orgId}/whatsapp-templates/sync": Row(MANAGER, 202, _template_sync, foreign=None),
        "POST /organizations/{orgId}/conversations/{conversationId}/notes": Row(
            STAFF, 201, _conversation({"body": "Called, no answer"})
        ),
        "POST /organizations/{orgId}/conversations/{conversationId}/read": Row(STAFF, 200, _conversation()),
        "PUT /organizations/{orgId}/conversations/{conversationId}/assignee": Row(
            STAFF,
            200,
            lambda w: Req({"conversationId": w.conversation()}, body={"assigneeUserId": str(w.user_ids["coach"])}),
        ),
        "GET /organizations/{orgId}/leads/{leadId}/consent": Row(STAFF, 200, _lead),
        "PUT /organizations/{orgId}/leads/{leadId}/consent/{channel}": Row(
            STAFF,
            200,
            lambda w: Req(
                {"leadId": w.lead(), "channel": "email"}, body={"status": "granted", "legalBasis": "consent"}
            ),
        ),
        "POST /organizations/{orgId}/bulk-emails": Row(
            STAFF,
            202,
            lambda w: Req(body={"subject": "News", "body": "Hello", "audience": {"leadIds": [w.emailable_lead()]}}),
            foreign=400,  # another organization's leads match no lead of ours: AUDIENCE_EMPTY, as random ids
        ),
        "GET /organizations/{orgId}/bulk-emails/{jobId}": Row(STAFF, 200, lambda w: Req({"jobId": w.bulk_email()})),
        "GET /organizations/{orgId}/bulk-emails/{jobId}/recipients": Row(
            STAFF, 200, lambda w: Req({"jobId": w.bulk_email()})
        ),
        "GET /unsubscribe/{token}": Row(PUBLIC, 200, lambda w: Req({"token": w.unsubscribe_token()}), foreign=None),
        "POST /unsubscribe/{token}": Row(PUBLIC, 200, lambda w: Req({"token": w.unsubscribe_token()}), foreign=None),
        # -- deals (staff), deal pipeline (staff reads, owner/admin edits), owner departure ------------------------
        "GET /organizations/{orgId}/deals": Row(STAFF, 200, foreign=None),
        "POST /organizations/{orgId}/deals": Row(
            STAFF,
            201,
            lambda w: Req(
                body={
                    "title": "Annual plan",
                    "offerType": "plan",
                    "valueMinor": 120_000,
                    "currency": "EUR",
                    "expectedCloseDate": in_days(30)[:10],
                    "leadId": w.lead(),
                }
            ),
        ),
        "GET /organizations/{orgId}/deals/forecast": Row(STAFF, 200, foreign=None),
        "GET /organizations/{orgId}/deals/{dealId}": Row(STAFF, 200, _deal),
        "PATCH /organizations/{orgId}/deals/{dealId}": Row(
            STAFF, 200, lambda w: _deal(w, lambda w, d: {"version": d["version"], "title": "Renamed plan"})
        ),
        "POST /organizations/{orgId}/deals/{dealId}/move": Row(
            STAFF,
            200,
            lambda w: _deal(
                w,
                lambda w, d: {
                    "version": d["version"],
                    "stageId": w.deal_stage("discovery"),
                    "activityAt": in_days(-1),
                },
            ),
        ),
        "POST /organizations/{orgId}/deals/{dealId}/reactivate": Row(
            STAFF,
            200,
            lambda w: (lambda d: Req({"dealId": d["id"]}, body={"version": d["version"], "reason": "Came back"}))(
                w.walked_deal("lost")
            ),
        ),
        "POST /organizations/{orgId}/deals/{dealId}/compensations": Row(
            STAFF,
            201,
            lambda w: (lambda d: Req({"dealId": d["id"]}, body={"amountMinor": -1000, "reason": "Goodwill"}))(
                w.walked_deal("won")
            ),
        ),
        "GET /organizations/{orgId}/deals/pipeline": Row(STAFF, 200, foreign=None),
        "PATCH /organizations/{orgId}/deals/pipeline": Row(
            MANAGER, 200, lambda w: Req(body={"name": f"Sales {uuid.uuid4().hex[:4]}"}), foreign=None
        ),
        "POST /organizations/{orgId}/deals/pipeline/stages": Row(
            MANAGER,
            201,
            lambda w: Req(
                body={
                    "name": f"Trial {uuid.uuid4().hex[:4]}",
                    "kind": "discovery",
                    "probability": 30,
                    "forecastCategory": "pipeline",
                }
            ),
            foreign=None,
        ),
        # another organization's stage ids are not every stage of ours: STAGE_ORDER_MISMATCH, as random ids
        "PUT /organizations/{orgId}/deals/pipeline/stages/order": Row(MANAGER, 200, _deal_stage_order, foreign=400),
        "PATCH /organizations/{orgId}/deals/pipeline/stages/{stageId}": Row(MANAGER, 200, _deal_stage),
        "POST /organizations/{orgId}/memberships/{membershipId}/handover": Row(
            MANAGER, 200, lambda w: Req({"membershipId": w.new_member_membership()}, body={})
        ),
        "GET /organizations/{orgId}/default-assignee": Row(STAFF, 200, foreign=None),
        "PUT /organizations/{orgId}/default-assignee": Row(
            MANAGER,
            200,
            lambda w: Req(body={"userId": str(w.user_ids["coach"])}),
            foreign=400,  # ASSIGNEE_NOT_STAFF
        ),
        # -- assignment rules (staff read, owner/admin write) and staff availability (own; anyone's for managers)
        "GET /organizations/{orgId}/lead-assignment-rules": Row(STAFF, 200, foreign=None),
        "POST /organizations/{orgId}/lead-assignment-rules": Row(
            MANAGER,
            201,
            lambda w: Req(body={"name": "Coach", "strategy": "fixed", "userIds": [str(w.user_ids["coach"])]}),
            foreign=400,  # another organization's coach: ASSIGNEE_NOT_STAFF
        ),
        "PUT /organizations/{orgId}/lead-assignment-rules/order": Row(
            MANAGER, 200, lambda w: Req(body={"ruleIds": list(reversed(w.assignment_rule_ids()))}), foreign=400
        ),  # another organization's rule ids are not every rule of ours: ASSIGNMENT_RULE_ORDER_MISMATCH
        "PATCH /organizations/{orgId}/lead-assignment-rules/{ruleId}": Row(
            MANAGER, 200, lambda w: Req({"ruleId": w.assignment_rule()}, body={"active": False})
        ),
        "DELETE /organizations/{orgId}/lead-assignment-rules/{ruleId}": Row(
            MANAGER, 200, lambda w: Req({"ruleId": w.assignment_rule()})
        ),
        "GET /organizations/{orgId}/staff/{userId}/availability": Row(
            STAFF, 200, lambda w: Req({"userId": str(w.user_ids["coach"])}), callers=OWN_AVAILABILITY
        ),
        "PUT /organizations/{orgId}/staff/{userId}/availability": Row(
            STAFF,
            200,
            lambda w: Req(
                {"userId": str(w.user_ids["coach"])},
                body={"awayUntil": in_days(3), "workingHours": [{"day": 1, "from": "09:00", "to": "17:00"}]},
            ),
            callers=OWN_AVAILABILITY,
        ),
        # -- the organization: settings (staff read, owner/admin write), members (staff) ------------------------
        "GET /organizations/{orgId}/settings": Row(STAFF, 200, foreign=None),
        "PATCH /organizations/{orgId}/settings": Row(
            MANAGER,
            200,
            lambda w: Req(body={"locale": "he-IL", "country": "IL", "defaultAssigneeUserId": str(w.user_ids["coach"])}),
            foreign=400,  # another organization's coach: ASSIGNEE_NOT_STAFF, and nothing of ours changes
        ),
        "GET /organizations/{orgId}/members": Row(
            STAFF, 200, lambda w: Req(query={"role": "owner,coach"}), foreign=None
        ),
        # -- tickets: staff, or a member for their own; actions staff; configuration staff reads, owner/admin -----
        "GET /organizations/{orgId}/tickets": Row(MEMBER, 200, foreign=None),
        "POST /organizations/{orgId}/tickets": Row(
            MEMBER, 201, lambda w: Req(body={"subject": "Help", "leadId": w.lead()}), callers=STAFF_BODY
        ),
        "GET /organizations/{orgId}/tickets/{ticketId}": Row(MEMBER, 200, _ticket("unassigned"), callers=NOT_THEIRS),
        # the assignee is checked first: another organization's ticket with its agent is ASSIGNEE_NOT_STAFF, as
        # random ids are (with one of our agents it is 404: test_another_organizations_ticket_is_not_found_to_assign)
        "POST /organizations/{orgId}/tickets/{ticketId}/assign": Row(
            STAFF,
            200,
            lambda w: Req({"ticketId": w.ticket()}, body={"assigneeUserId": str(w.user_ids["coach"])}),
            foreign=400,
        ),
        "POST /organizations/{orgId}/tickets/{ticketId}/respond": Row(
            STAFF, 200, _ticket("assigned", {"message": "On it"})
        ),
        "POST /organizations/{orgId}/tickets/{ticketId}/request-info": Row(
            STAFF, 200, _ticket("in_progress", {"message": "Which browser?"})
        ),
        "POST /organizations/{orgId}/tickets/{ticketId}/customer-reply": Row(
            STAFF, 200, _ticket("awaiting_customer", {"message": "Firefox"})
        ),
        "POST /organizations/{orgId}/tickets/{ticketId}/resolve": Row(
            STAFF, 200, _ticket("in_progress", {"resolution": "Cleared the cache"})
        ),
        "POST /organizations/{orgId}/tickets/{ticketId}/confirm": Row(STAFF, 200, _ticket("resolved")),
        "POST /organizations/{orgId}/tickets/{ticketId}/reopen": Row(
            STAFF, 200, _ticket("resolved", {"reason": "Still broken"})
        ),
        "POST /organizations/{orgId}/tickets/{ticketId}/take-ownership": Row(
            STAFF, 200, lambda w: Req({"ticketId": w.escalated_ticket()}), callers=HIGHER_TIER
        ),
        "GET /organizations/{orgId}/ticket-settings": Row(STAFF, 200, foreign=None),
        "PATCH /organizations/{orgId}/ticket-settings": Row(
            MANAGER, 200, lambda w: Req(body={"autoCloseHours": 72}), foreign=None
        ),
        "GET /organizations/{orgId}/ticket-queues": Row(STAFF, 200, foreign=None),
        "POST /organizations/{orgId}/ticket-queues": Row(
            MANAGER, 201, lambda w: Req(body={"name": f"Billing {uuid.uuid4().hex[:8]}"}), foreign=None
        ),
        "PATCH /organizations/{orgId}/ticket-queues/{queueId}": Row(
            MANAGER, 200, lambda w: Req({"queueId": w.ticket_queue()}, body={"name": f"Renamed {uuid.uuid4().hex[:8]}"})
        ),
        "GET /organizations/{orgId}/ticket-routing-rules": Row(STAFF, 200, foreign=None),
        "POST /organizations/{orgId}/ticket-routing-rules": Row(
            MANAGER, 201, lambda w: Req(body={"name": "Refunds", "keywords": ["refund"], "queueId": w.ticket_queue()})
        ),
        "PUT /organizations/{orgId}/ticket-routing-rules/order": Row(
            MANAGER, 200, lambda w: Req(body={"ruleIds": list(reversed(w.routing_rule_ids()))}), foreign=400
        ),  # another organization's rule ids are not every rule of ours: TICKET_RULE_ORDER_MISMATCH
        "PATCH /organizations/{orgId}/ticket-routing-rules/{ruleId}": Row(
            MANAGER, 200, lambda w: Req({"ruleId": w.routing_rule()}, body={"active": False})
        ),
        "DELETE /organizations/{orgId}/ticket-routing-rules/{ruleId}": Row(
            MANAGER, 200, lambda w: Req({"ruleId": w.routing_rule()})
        ),
        "GET /organizations/{orgId}/ticket-reports/sla": Row(STAFF, 200, foreign=None),
        "GET /public/ticket-surveys/{token}": Row(
            PUBLIC, 200, lambda w: Req({"token": w.survey_token()}), foreign=None
        ),
        "POST /public/ticket-surveys/{token}": Row(
            PUBLIC, 201, lambda w: Req({"token": w.survey_token()}, body={"rating": 5}), foreign=None
        ),
    }
)


def _scored(company_size: int = 100, *, criteria_met: bool = False, body: Any = None) -> Callable[[OrgWorld], Req]:
    return lambda w: Req({"leadId": w.scored_lead(company_size, criteria_met=criteria_met)}, body=body)


ROUTES.update(
    {
        # -- qualification, scoring, enrichment (staff; scoring models owner/admin) --------------------------
        "GET /organizations/{orgId}/scoring-models": Row(STAFF, 200, foreign=None),
        "POST /organizations/{orgId}/scoring-models": Row(
            MANAGER, 201, lambda w: Req(body={"rules": w.SCORING_RULES, "qualifyThreshold": 50}), foreign=None
        ),
        "POST /organizations/{orgId}/leads/{leadId}/enrichments": Row(
            STAFF,
            201,
            lambda w: Req(
                {"leadId": w.lead()},
                body={
                    "category": "firmographic",
                    "field": "companySize",
                    "value": 120,
                    "source": "clearbit",
                    "confidence": 0.9,
                },
            ),
        ),
        "GET /organizations/{orgId}/leads/{leadId}/enrichments": Row(STAFF, 200, _lead),
        "GET /organizations/{orgId}/leads/{leadId}/qualification": Row(STAFF, 200, _lead),
        "POST /organizations/{orgId}/leads/{leadId}/score": Row(STAFF, 200, _scored()),
        "PUT /organizations/{orgId}/leads/{leadId}/qualification/criteria": Row(
            STAFF, 200, _scored(body=OrgWorld.ALL_MET)
        ),
        "POST /organizations/{orgId}/leads/{leadId}/qualification/qualify": Row(
            STAFF, 200, _scored(criteria_met=True, body={})
        ),
        "POST /organizations/{orgId}/leads/{leadId}/qualification/nurture": Row(STAFF, 200, _scored(10, body={})),
        "POST /organizations/{orgId}/leads/{leadId}/qualification/disqualify": Row(
            STAFF, 200, _scored(body={"reasonCode": "no_budget"})
        ),
        "POST /organizations/{orgId}/leads/{leadId}/qualification/requalify": Row(
            STAFF, 200, lambda w: Req({"leadId": w.disqualified_lead()}, body={})
        ),
        # -- merges (staff), pseudonymized erase (owner/admin) ------------------------------------------------
        "POST /organizations/{orgId}/leads/{leadId}/merge": Row(
            STAFF, 200, lambda w: Req({"leadId": w.lead()}, body={"mergedLeadId": w.lead()})
        ),
        "GET /organizations/{orgId}/leads/{leadId}/merge-suggestions": Row(STAFF, 200, _lead),
        "GET /organizations/{orgId}/leads/{leadId}/merges": Row(STAFF, 200, _lead),
        "GET /organizations/{orgId}/lead-merges/{mergeId}": Row(STAFF, 200, lambda w: Req({"mergeId": w.merge()})),
        "POST /organizations/{orgId}/lead-merges/{mergeId}/undo": Row(
            STAFF, 200, lambda w: Req({"mergeId": w.merge()})
        ),
        "POST /organizations/{orgId}/leads/{leadId}/pseudonymize": Row(MANAGER, 200, _lead),
    }
)


def _spend(w: OrgWorld, body: Any = None) -> Req:
    campaign_id = w.campaign()
    spend = w.api("POST", f"/leads/campaigns/{campaign_id}/spend", body=SPEND).data
    return Req({"campaignId": campaign_id, "spendId": spend["id"]}, body=body)


SPEND = {"periodStart": "2026-10-01", "periodEnd": "2026-10-31", "amount": "1200.00", "currency": "EUR"}

ROUTES.update(
    {
        # -- analytics, attribution (staff); campaign spend (owner/admin) ------------------------------------
        "GET /organizations/{orgId}/leads/analytics": Row(STAFF, 200, foreign=None),
        "GET /organizations/{orgId}/leads/analytics/funnel": Row(STAFF, 200, foreign=None),
        "GET /organizations/{orgId}/leads/analytics/response-times": Row(STAFF, 200, foreign=None),
        "GET /organizations/{orgId}/leads/analytics/campaigns": Row(STAFF, 200, foreign=None),
        "GET /organizations/{orgId}/leads/{leadId}/attribution": Row(STAFF, 200, _lead),
        "PUT /organizations/{orgId}/leads/{leadId}/attribution": Row(
            STAFF,
            200,
            lambda w: Req({"leadId": w.lead()}, body={"channel": "referral", "reason": "Told us on the phone"}),
        ),
        "GET /organizations/{orgId}/leads/campaigns/{campaignId}/spend": Row(
            MANAGER, 200, lambda w: Req({"campaignId": w.campaign()})
        ),
        "POST /organizations/{orgId}/leads/campaigns/{campaignId}/spend": Row(
            MANAGER, 201, lambda w: Req({"campaignId": w.campaign()}, body=SPEND)
        ),
        "PATCH /organizations/{orgId}/leads/campaigns/{campaignId}/spend/{spendId}": Row(
            MANAGER, 200, lambda w: _spend(w, {"amount": "900.00"})
        ),
        "DELETE /organizations/{orgId}/leads/campaigns/{campaignId}/spend/{spendId}": Row(MANAGER, 204, _spend),
    }
)
