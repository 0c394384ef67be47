"""A directory made by the platform's events alone (no /_local/orgs): posted to the bus with /_local/events,
carried by the task_lifecycle queue, then used with tokens for the users' own subjects. A demotion and a
removal apply to the very next call."""

from __future__ import annotations

import random
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from leadcrm.platform.ids import uuid7

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

SOURCE = "platform.identity"


def _post(stack: LocalStackClient, detail_type: str, detail: dict[str, Any]) -> None:
    sent = stack.request(
        "POST", "/_local/events", json_body={"source": SOURCE, "detailType": detail_type, "detail": detail}
    )
    assert sent.status == 202, sent.body


def _membership(membership_id: str, org: str, user_id: str, role: str, minute: int) -> dict[str, Any]:
    return {
        "membershipId": membership_id,
        "organizationId": org,
        "userId": user_id,
        "role": role,
        "status": "active",
        "updatedAt": f"2026-12-01T09:{minute:02d}:00Z",
    }


@pytest.fixture(scope="module")
def studio(local_stack: LocalStackClient) -> dict[str, Any]:
    """An organization with an owner, a coach and an admin, from platform events posted in a shuffled order
    (memberships before their users and organization included), each user signing in with their subject."""
    org = str(uuid7())
    people = {
        role: {"userId": str(uuid7()), "membershipId": str(uuid7()), "sub": f"user_{uuid.uuid4().hex}"}
        for role in ("owner", "coach", "admin")
    }
    events = [
        (
            "organization.created",
            {
                "organizationId": org,
                "name": "Platform Studio",
                "timezone": "Asia/Jerusalem",
                "country": "IL",
                "locale": "he",
                "features": ["lead_management"],
                "updatedAt": "2026-12-01T09:00:00Z",
            },
        )
    ]
    for role, person in people.items():
        email = f"{role}.{person['sub'][-8:]}@studio.test"
        user = {
            "userId": person["userId"],
            "authSubject": person["sub"],
            "email": email,
            "updatedAt": "2026-12-01T09:00:00Z",
        }
        events.append(("user.created", {**user, "firstName": role.title(), "lastName": "Platform"}))
        events.append(("membership.created", _membership(person["membershipId"], org, person["userId"], role, 0)))
    random.Random(18).shuffle(events)
    for detail_type, detail in events:
        _post(local_stack, detail_type, detail)
    local_stack.wait_until_idle()
    for person in people.values():
        person["token"] = local_stack.token_for(person["sub"])
    return {"organizationId": org, **people}


def test_the_owner_made_by_platform_events_lists_leads(local_stack: LocalStackClient, studio: dict[str, Any]):
    org, owner = studio["organizationId"], studio["owner"]["token"]
    created = local_stack.request("POST", f"/organizations/{org}/leads", token=owner, json_body={"name": "Dana"})
    assert created.status == 201, created.body
    listed = local_stack.request("GET", f"/organizations/{org}/leads", token=owner)
    assert listed.status == 200, listed.body
    assert [lead["name"] for lead in listed.json()["data"]] == ["Dana"]


def test_a_coach_demoted_to_member_is_refused_on_the_next_call(local_stack: LocalStackClient, studio: dict[str, Any]):
    org, coach = studio["organizationId"], studio["coach"]
    assert local_stack.request("GET", f"/organizations/{org}/leads", token=coach["token"]).status == 200

    _post(local_stack, "membership.updated", _membership(coach["membershipId"], org, coach["userId"], "member", 5))
    local_stack.wait_until_idle()

    refused = local_stack.request("GET", f"/organizations/{org}/leads", token=coach["token"])
    assert (refused.status, refused.json()["error"]["code"]) == (403, "STAFF_ONLY")


def test_a_removed_membership_is_refused_on_the_next_call(local_stack: LocalStackClient, studio: dict[str, Any]):
    org, admin = studio["organizationId"], studio["admin"]
    assert local_stack.request("GET", f"/organizations/{org}/leads", token=admin["token"]).status == 200

    deletion = {"membershipId": admin["membershipId"], "organizationId": org, "deletedAt": "2026-12-01T09:10:00Z"}
    _post(local_stack, "membership.deleted", deletion)
    local_stack.wait_until_idle()

    refused = local_stack.request("GET", f"/organizations/{org}/leads", token=admin["token"])
    assert (refused.status, refused.json()["error"]["code"]) == (403, "NOT_A_MEMBER")
