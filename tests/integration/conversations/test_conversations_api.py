"""Conversations API (staff): find-or-create idempotent on (organization, channel, contact), the inbox with
its filters and keyset pages, read, assign, status, internal notes, and the gates."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api
from tests.support.conversations_helpers import (
    conversations_path,
    inbox,
    messages_of,
    open_conversation,
    revoke_email,
    set_prefs,
    set_thread_columns,
    thread_row,
    threads_of_org,
)
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_moves_helpers import create_lead


@pytest.fixture
def owner(event_bus):
    return make_caller(role="owner")


def _thread(caller, lead_id):
    response = open_conversation(caller, {"leadId": str(lead_id), "channel": "email"})
    assert response.status in (200, 201), response.body
    return response.data["conversation"]


def test_opening_a_leads_thread_twice_gives_the_same_thread(owner):
    lead = create_lead(owner, email="dana@example.com")
    first = open_conversation(owner, {"leadId": lead["id"], "channel": "email"})
    second = open_conversation(owner, {"leadId": lead["id"], "channel": "email"})
    assert (first.status, second.status) == (201, 200)
    assert first.data["conversation"]["id"] == second.data["conversation"]["id"]
    assert len(threads_of_org(owner.org_id)) == 1


def test_a_member_thread_is_one_per_membership(owner):
    member = make_membership(owner.organization, make_user(), role="member")
    first = open_conversation(owner, {"membershipId": str(member.id)})
    second = open_conversation(owner, {"membershipId": str(member.id)})
    assert first.data["conversation"]["id"] == second.data["conversation"]["id"]
    assert first.data["conversation"]["membershipId"] == str(member.id)


def test_a_thread_names_exactly_one_contact(owner):
    lead = create_lead(owner)
    both = open_conversation(owner, {"leadId": lead["id"], "membershipId": str(uuid.uuid4())})
    neither = open_conversation(owner, {"channel": "email"})
    assert (both.status, neither.status) == (400, 400)


def test_another_organizations_lead_or_member_is_not_found(owner):
    stranger = make_caller(role="owner")
    lead = create_lead(stranger)
    member = make_membership(stranger.organization, make_user(), role="member")
    assert open_conversation(owner, {"leadId": lead["id"]}).error_code == "LEAD_NOT_FOUND"
    assert open_conversation(owner, {"membershipId": str(member.id)}).error_code == "MEMBER_NOT_FOUND"
    assert threads_of_org(owner.org_id) == []


def test_another_organizations_thread_answers_404_like_a_random_id(owner):
    stranger = make_caller(role="owner")
    theirs = _thread(stranger, create_lead(stranger)["id"])
    for conversation_id in (theirs["id"], str(uuid.uuid4()), "not-a-uuid"):
        response = call_api("GET", conversations_path(owner.org_id, conversation_id), sub=owner.sub)
        assert (response.status, response.error_code) == (404, "CONVERSATION_NOT_FOUND")


def test_members_cannot_use_conversations():
    member = make_caller(role="member")
    response = inbox(member)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_the_inbox_lists_newest_activity_first_with_keyset_pages(owner):
    threads = [_thread(owner, create_lead(owner, name=f"Lead {i}")["id"]) for i in range(5)]
    first = inbox(owner, limit="2")
    assert [t["id"] for t in first.data] == [threads[4]["id"], threads[3]["id"]]
    second = inbox(owner, limit="2", cursor=first.body["nextCursor"])
    third = inbox(owner, limit="2", cursor=second.body["nextCursor"])
    assert [t["id"] for t in second.data + third.data] == [threads[2]["id"], threads[1]["id"], threads[0]["id"]]
    assert third.body["nextCursor"] is None
    assert first.data[0]["contactName"] == "Lead 4"


def test_the_inbox_filters_by_status_assignee_unread_and_lead(owner):
    coach = make_membership(owner.organization, make_user(), role="coach")
    a, b, c = (_thread(owner, create_lead(owner, name=n)["id"]) for n in ("A", "B", "C"))
    call_api("PATCH", conversations_path(owner.org_id, a["id"]), sub=owner.sub, body={"status": "closed"})
    call_api("PUT", conversations_path(owner.org_id, b["id"], "assignee"), sub=owner.sub,
             body={"assigneeUserId": str(owner.user.id)})  # fmt: skip
    call_api("PUT", conversations_path(owner.org_id, c["id"], "assignee"), sub=owner.sub,
             body={"assigneeUserId": str(coach.user_id)})  # fmt: skip
    assert [t["id"] for t in inbox(owner, status="closed").data] == [a["id"]]
    assert [t["id"] for t in inbox(owner, assignee="me").data] == [b["id"]]
    assert [t["id"] for t in inbox(owner, assignee="unassigned").data] == [a["id"]]
    assert [t["id"] for t in inbox(owner, leadId=c["leadId"]).data] == [c["id"]]
    assert inbox(owner, unread="true").data == []
    assert inbox(owner, assignee="someone").status == 400
    assert inbox(owner, cursor="garbage").error_code == "INVALID_CURSOR"


def test_assigning_to_an_active_member_shows_their_name(owner):
    thread = _thread(owner, create_lead(owner)["id"])
    response = call_api("PUT", conversations_path(owner.org_id, thread["id"], "assignee"), sub=owner.sub,
                        body={"assigneeUserId": str(owner.user.id)})  # fmt: skip
    assert response.status == 200
    assert response.data["assigneeUserId"] == str(owner.user.id)
    assert response.data["assigneeName"] == "Test User"


@pytest.mark.parametrize("kind", ["stranger", "other_org_member", "cancelled", "deleted"])
def test_assigning_to_someone_who_is_not_an_active_member_is_a_400(owner, kind):
    thread = _thread(owner, create_lead(owner)["id"])
    user = make_user()
    if kind == "other_org_member":
        make_membership(make_caller().organization, user, role="coach")
    elif kind == "cancelled":
        make_membership(owner.organization, user, role="coach", status="cancelled")
    elif kind == "deleted":
        make_membership(owner.organization, user, role="coach", deleted=True)
    response = call_api("PUT", conversations_path(owner.org_id, thread["id"], "assignee"), sub=owner.sub,
                        body={"assigneeUserId": str(user.id)})  # fmt: skip
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_MEMBER")
    assert thread_row(thread["id"])["assigned_to_user_id"] is None


def test_unassigning_clears_the_assignee(owner):
    thread = _thread(owner, create_lead(owner)["id"])
    path = conversations_path(owner.org_id, thread["id"], "assignee")
    call_api("PUT", path, sub=owner.sub, body={"assigneeUserId": str(owner.user.id)})
    assert call_api("PUT", path, sub=owner.sub, body={"assigneeUserId": None}).data["assigneeUserId"] is None


def test_a_note_is_written_even_when_the_lead_revoked_every_channel(owner):
    lead = create_lead(owner, email="dana@example.com")
    thread = _thread(owner, lead["id"])
    revoke_email(owner, lead["id"])
    response = call_api("POST", conversations_path(owner.org_id, thread["id"], "notes"), sub=owner.sub,
                        body={"body": "Called her, she prefers WhatsApp"})  # fmt: skip
    assert response.status == 201
    assert response.data["direction"] == "note" and response.data["status"] == "note"
    assert [m["direction"] for m in messages_of(thread["id"])] == ["note"]


def test_a_note_on_a_member_thread_is_written_even_when_they_opted_out(owner):
    member = make_membership(owner.organization, make_user(), role="member")
    set_prefs(member.id, {"newMessage": {"email": False}})
    thread = open_conversation(owner, {"membershipId": str(member.id)}).data["conversation"]
    response = call_api("POST", conversations_path(owner.org_id, thread["id"], "notes"), sub=owner.sub,
                        body={"body": "internal"})  # fmt: skip
    assert response.status == 201


def test_mark_read_sets_unread_to_zero(owner):
    thread = _thread(owner, create_lead(owner)["id"])
    set_thread_columns(thread["id"], unread_count=3)
    response = call_api("POST", conversations_path(owner.org_id, thread["id"], "read"), sub=owner.sub)
    assert response.status == 200 and response.data["unreadCount"] == 0


def test_the_messages_of_a_thread_come_newest_first_in_pages(owner):
    thread = _thread(owner, create_lead(owner)["id"])
    for i in range(3):
        call_api("POST", conversations_path(owner.org_id, thread["id"], "notes"), sub=owner.sub, body={"body": f"n{i}"})
    first = call_api("GET", conversations_path(owner.org_id, thread["id"], "messages"), sub=owner.sub,
                     query={"limit": "2"})  # fmt: skip
    rest = call_api("GET", conversations_path(owner.org_id, thread["id"], "messages"), sub=owner.sub,
                    query={"limit": "2", "cursor": first.body["nextCursor"]})  # fmt: skip
    assert [m["body"] for m in first.data + rest.data] == ["n2", "n1", "n0"]
    assert rest.body["nextCursor"] is None
