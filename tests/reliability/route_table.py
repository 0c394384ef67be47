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
