"""The organization's settings and members over HTTP, through the local stack, as the dashboard drives them:
the country set in settings makes two spellings of one phone one lead, and self-signup finds that lead by
the member's phone."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def _call(
    stack: LocalStackClient, method: str, path: str, token: str, body: Any = None, query: dict[str, str] | None = None
) -> Any:
    if query:
        path = f"{path}?{urllib.parse.urlencode(query)}"
    reply = stack.request(method, path, token=token, json_body=body)
    assert 200 <= reply.status < 300, (method, path, reply.status, reply.body)
    return reply.json()


def _settle(stack: LocalStackClient) -> None:
    """Until idle: a consumer's own events wait in the outbox for the relay (once a minute); a tick runs it now."""
    for _ in range(3):
        try:
            stack.wait_until_idle(timeout=10)
            return
        except AssertionError:
            stack.request("POST", "/_local/tick", json_body={"job": "outbox_relay"})
    stack.wait_until_idle()


def _capture(stack: LocalStackClient, org: str, body: dict[str, Any]) -> None:
    reply = stack.capture(org, body)
    assert reply.status == 201, reply.body


def test_with_the_country_set_in_settings_two_spellings_of_a_phone_are_one_lead(local_stack: LocalStackClient):
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    settings = _call(local_stack, "PATCH", f"/organizations/{org}/settings", owner, {"country": "IL"})["data"]
    assert (settings["country"], settings["phoneRegion"]) == ("IL", "IL")

    _capture(local_stack, org, {"name": "Noa Levi", "phone": "050-123-4567"})
    _capture(local_stack, org, {"name": "Noa Levi", "phone": "+972501234567"})
    _settle(local_stack)

    listed = _call(local_stack, "GET", f"/organizations/{org}/leads", owner)["data"]
    assert [(lead["name"], lead["phone"]) for lead in listed] == [("Noa Levi", "050-123-4567")]
    found = _call(local_stack, "GET", f"/organizations/{org}/leads", owner, query={"search": "+972 50 123 4567"})
    assert [lead["id"] for lead in found["data"]] == [listed[0]["id"]]


def test_self_signup_finds_the_lead_by_the_members_phone_however_it_was_typed(local_stack: LocalStackClient):
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    _call(local_stack, "PATCH", f"/organizations/{org}/settings", owner, {"timezone": "Asia/Jerusalem"})
    lead = _call(
        local_stack, "POST", f"/organizations/{org}/leads", owner, {"name": "Dana Cohen", "phone": "050-765-4321"}
    )["data"]
    signed_up = local_stack.request(
        "POST",
        "/_local/users",
        json_body={"organizationId": org, "firstName": "Dana", "lastName": "Cohen", "phone": "+972 50 765 4321"},
    ).json()["data"]
    members = _call(local_stack, "GET", f"/organizations/{org}/members", owner, query={"role": "member"})["data"]
    [membership] = [m["membershipId"] for m in members if m["userId"] == signed_up["userId"]]

    detail = {"organizationId": org, "userId": signed_up["userId"], "membershipId": membership}
    _call(local_stack, "POST", "/_local/events", owner, {"detailType": "membership.self_signup", "detail": detail})
    _settle(local_stack)

    linked = _call(local_stack, "GET", f"/organizations/{org}/leads/{lead['id']}", owner)["data"]
    assert linked["status"] == "converted"
    assert any((entry.get("payload") or {}).get("membershipId") == membership for entry in linked["timeline"])


def test_members_are_listed_for_staff_and_refused_to_members(local_stack: LocalStackClient):
    demo = local_stack.new_organization()
    org, users = demo["organizationId"], demo["users"]

    listed = _call(local_stack, "GET", f"/organizations/{org}/members", users["coach"]["token"])
    member = local_stack.request("GET", f"/organizations/{org}/members", token=users["member"]["token"])

    assert {m["userId"] for m in listed["data"]} == {u["userId"] for u in users.values()}
    assert (member.status, member.json()["error"]["code"]) == (403, "STAFF_ONLY")


def test_another_organizations_settings_and_members_are_refused(local_stack: LocalStackClient):
    ours, theirs = local_stack.new_organization(), local_stack.new_organization()
    owner = ours["users"]["owner"]["token"]
    for method, path, body in (
        ("GET", "settings", None),
        ("PATCH", "settings", {"name": "Taken over"}),
        ("GET", "members", None),
    ):
        reply = local_stack.request(
            method, f"/organizations/{theirs['organizationId']}/{path}", token=owner, json_body=body
        )
        assert (reply.status, reply.json()["error"]["code"]) == (403, "NOT_A_MEMBER"), (method, path)
    their_settings = _call(
        local_stack, "GET", f"/organizations/{theirs['organizationId']}/settings", theirs["users"]["owner"]["token"]
    )
    assert their_settings["data"]["name"] == theirs["name"]
