"""GET /organizations/{orgId}/members on PostgreSQL: active members only, by name, keyset pages, a role filter."""

from __future__ import annotations

import base64

import pytest
from sqlalchemy import insert

from leadcrm.directory.tables import users
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.api import call_api
from tests.support.database import count_statements
from tests.support.factories import User, make_caller, make_membership


def _person(first: str | None, last: str | None) -> User:
    user_id = uuid7()
    email = f"{user_id.hex[-10:]}@example.test"
    with get_engine().begin() as conn:
        conn.execute(
            insert(users).values(
                id=user_id, auth_subject=f"user_{user_id.hex}", email=email, first_name=first, last_name=last
            )
        )
    return User(id=user_id, auth_subject=f"user_{user_id.hex}", email=email)


def _members(caller, query=None):
    response = call_api("GET", f"/organizations/{caller.org_id}/members", sub=caller.sub, query=query)
    assert response.status == 200, response.body
    return response


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_a_member_is_listed_with_role_name_email_and_ids(owner):
    dana = _person("Dana", "Cohen")
    membership = make_membership(owner.organization, dana, role="coach")
    [listed] = [m for m in _members(owner).data if m["userId"] == str(dana.id)]
    assert listed == {
        "membershipId": str(membership.id),
        "userId": str(dana.id),
        "role": "coach",
        "firstName": "Dana",
        "lastName": "Cohen",
        "email": dana.email,
    }


def test_only_live_active_memberships_are_listed(owner):
    active = _person("Active", "One")
    make_membership(owner.organization, active, role="coach")
    for status, deleted in (
        ("suspended", False),
        ("cancelled", False),
        ("pending_invitation", False),
        ("active", True),
    ):
        make_membership(owner.organization, _person("Gone", status), role="coach", status=status, deleted=deleted)
    listed = {m["userId"] for m in _members(owner).data}
    assert listed == {str(owner.user.id), str(active.id)}


def test_members_are_ordered_by_first_then_last_name_whatever_the_case(owner):
    for first, last in (("bob", "Zed"), ("Bob", "adams"), ("alice", None), ("Carl", "Jones")):
        make_membership(owner.organization, _person(first, last), role="member")
    names = [(m["firstName"], m["lastName"]) for m in _members(owner).data if m["userId"] != str(owner.user.id)]
    assert names == [("alice", None), ("Bob", "adams"), ("bob", "Zed"), ("Carl", "Jones")]


def test_keyset_pages_list_every_member_once_in_order(owner):
    for _ in range(7):
        make_membership(owner.organization, _person("Same", "Name"), role="coach")  # ties broken by membership id
    make_membership(owner.organization, _person("Zoe", "Last"), role="admin")
    every = [m["membershipId"] for m in _members(owner, {"limit": "200"}).data]
    paged, cursor = [], None
    while True:
        page = _members(owner, {"limit": "3", **({"cursor": cursor} if cursor else {})}).body
        paged += [m["membershipId"] for m in page["data"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert paged == every
    assert len(every) == 9


def test_the_cursor_carries_no_name(owner):
    make_membership(owner.organization, _person("Secretive", "Person"), role="coach")
    cursor = _members(owner, {"limit": "1"}).body["nextCursor"]
    decoded = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    assert "Secretive" not in decoded and "secretive" not in decoded


def test_the_role_filter_takes_one_or_several_roles(owner):
    coach = _person("Coach", "C")
    admin = _person("Admin", "A")
    make_membership(owner.organization, coach, role="coach")
    make_membership(owner.organization, admin, role="admin")
    make_membership(owner.organization, _person("Member", "M"), role="member")
    assert {m["userId"] for m in _members(owner, {"role": "coach"}).data} == {str(coach.id)}
    assert {m["role"] for m in _members(owner, {"role": "owner,admin,coach"}).data} == {"owner", "admin", "coach"}


@pytest.mark.parametrize(
    "query",
    [{"role": "janitor"}, {"limit": "0"}, {"limit": "201"}, {"cursor": "not-a-cursor"}, {"cursor": "WyJ4Il0"}],
    ids=repr,
)
def test_bad_parameters_are_refused_with_400(owner, query):
    response = call_api("GET", f"/organizations/{owner.org_id}/members", sub=owner.sub, query=query)
    assert response.status == 400, response.body


def test_a_member_is_refused_the_list(owner):
    member = make_caller(role="member", organization=owner.organization)
    response = call_api("GET", f"/organizations/{owner.org_id}/members", sub=member.sub)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_another_organizations_members_are_refused(owner):
    stranger = make_caller(role="owner")
    response = call_api("GET", f"/organizations/{owner.org_id}/members", sub=stranger.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_a_page_costs_two_statements_whatever_its_size(owner):
    for i in range(12):
        make_membership(owner.organization, _person(f"P{i:02}", "X"), role="coach")
    counts = []
    for limit in ("1", "10"):
        cursor = _members(owner, {"limit": "1"}).body["nextCursor"]
        with count_statements(get_engine()) as log:
            _members(owner, {"limit": limit, "cursor": cursor})
        counts.append(len(log))
    assert counts == [2, 2]  # the caller, then the page
