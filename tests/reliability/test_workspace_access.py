"""GET …/sales-workspace/access/me answers what the routes allow (issue 26): for every role, each action it
lists is let through by the route that carries it, and each one it leaves out is refused 403.

Each action's route is called with the valid request of its row in the route table (route_table.py), so the
request is one the route accepts from a permitted caller: the only thing that can refuse it is the gate.
"""

from __future__ import annotations

import pytest

from leadcrm.directory.actions import GATES, WorkspaceAction
from tests.reliability.route_table import ROUTES
from tests.support.api import ApiResponse, call_api
from tests.support.reliability_helpers import ROLES, OrgWorld, make_world

# The route that carries each action (one is enough: they share the action's gate).
ACTION_ROUTES: dict[WorkspaceAction, str] = {
    WorkspaceAction.VIEW_LEADS: "GET /organizations/{orgId}/leads/queue",
    WorkspaceAction.EDIT_LEADS: "PATCH /organizations/{orgId}/leads/{leadId}",
    WorkspaceAction.MOVE_STAGE: "PUT /organizations/{orgId}/sales-workspace/leads/{leadId}/stage",
    WorkspaceAction.LOG_RESULTS: "POST /organizations/{orgId}/sales-workspace/leads/{leadId}/results",
    WorkspaceAction.BULK_MOVE: "POST /organizations/{orgId}/leads/bulk-move-stage",
    WorkspaceAction.BULK_EMAIL: "POST /organizations/{orgId}/bulk-emails",
    WorkspaceAction.CONVERT: "POST /organizations/{orgId}/leads/{leadId}/convert",
    WorkspaceAction.LINK_MEMBER: "POST /organizations/{orgId}/leads/{leadId}/link-member",
    WorkspaceAction.ERASE: "DELETE /organizations/{orgId}/leads/{leadId}",
    WorkspaceAction.EDIT_PIPELINES: "POST /organizations/{orgId}/pipelines",
    WorkspaceAction.CONNECT_INTEGRATIONS: "POST /organizations/{orgId}/integrations/meta",
    WorkspaceAction.EDIT_ASSIGNMENT_RULES: "POST /organizations/{orgId}/lead-assignment-rules",
    WorkspaceAction.MANAGE_WEBHOOKS: "POST /organizations/{orgId}/webhook-subscriptions",
}


@pytest.fixture(scope="module")
def world() -> OrgWorld:
    return make_world("Workspace access")


@pytest.fixture(autouse=True)
def aws(shared_route_stack):
    """The routes' AWS stand-ins (bulk email, integrations), one moto for the module."""


def _access(world: OrgWorld, role: str) -> dict:
    response = call_api("GET", f"/organizations/{world.id}/sales-workspace/access/me", sub=world.subjects[role])
    assert response.status == 200, response.body
    return response.data


def _call_action(world: OrgWorld, role: str, action: WorkspaceAction) -> ApiResponse:
    key = ACTION_ROUTES[action]
    request = ROUTES[key].request(world)
    method, template = key.split(" ", 1)
    path = template.format(orgId=world.id, **request.path)
    return call_api(
        method, path, sub=world.subjects[role], body=request.body, query=request.query, headers=request.headers
    )


def test_every_action_has_a_route_to_prove_it():
    assert set(ACTION_ROUTES) == set(GATES) == set(WorkspaceAction)


@pytest.mark.parametrize("role", ROLES)
def test_access_me_names_the_role_and_the_features(world, role):
    access = _access(world, role)
    assert access["role"] == role
    assert "lead_management" in access["features"]


@pytest.mark.parametrize("role", ROLES)
def test_each_listed_action_is_allowed_by_its_route_and_each_omitted_one_refused(world, role):
    listed = set(_access(world, role)["actions"])
    for action in WorkspaceAction:
        response = _call_action(world, role, action)
        if action.value in listed:
            assert response.status == ROUTES[ACTION_ROUTES[action]].ok, (role, action, response.body)
        else:
            assert response.status == 403, (role, action, response.status, response.body)


def test_a_member_may_ask_and_is_offered_nothing(world):
    assert _access(world, "member")["actions"] == []


def test_an_owner_is_offered_every_action(world):
    assert _access(world, "owner")["actions"] == [action.value for action in WorkspaceAction]
