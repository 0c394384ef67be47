"""The Tasks API (staff): list with filters and keyset pages, create, update, complete, cancel."""

from __future__ import annotations

import uuid

import pytest

from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import (
    create_task,
    lead_tasks,
    list_tasks,
    patch_task,
    task_action,
    tasks_path,
)
from tests.support.lead_moves_helpers import create_lead


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_a_created_task_is_the_callers_by_default(owner):
    response = create_task(owner, {"title": "Order towels", "dueDate": "2026-05-01", "dueTime": "09:30"})
    assert response.status == 201, response.body
    data = response.data
    assert (data["type"], data["status"], data["priority"], data["source"]) == (
        "general",
        "pending",
        "medium",
        "manual",
    )
    assert (data["assigneeUserId"], data["dueDate"], data["dueTime"]) == (str(owner.user.id), "2026-05-01", "09:30:00")
    assert (data["linkedLeadId"], data["lead"]) == (None, None)


def test_a_task_can_go_to_another_staff_member_but_not_to_a_member(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    member = make_caller(role="member", organization=owner.organization)
    ok = create_task(owner, {"title": "t", "assigneeUserId": str(coach.user.id)})
    assert ok.data["assigneeUserId"] == str(coach.user.id)
    refused = create_task(owner, {"title": "t", "assigneeUserId": str(member.user.id)})
    assert (refused.status, refused.error_code) == (400, "ASSIGNEE_NOT_STAFF")


def test_rows_of_linked_tasks_name_the_lead_and_its_phone(owner):
    lead = create_lead(owner, "Ada Lovelace", phone="050-1234567")
    response = list_tasks(owner, leadId=lead["id"])
    [row] = response.data
    assert row["linkedLeadId"] == lead["id"]
    assert row["lead"] == {"id": lead["id"], "name": "Ada Lovelace", "phone": "050-1234567"}


def test_the_list_is_open_tasks_by_default_and_filters_by_status(owner):
    open_task = create_task(owner, {"title": "open"}).data
    done = create_task(owner, {"title": "done"}).data
    task_action(owner, done["id"], "complete")
    assert [t["id"] for t in list_tasks(owner).data] == [open_task["id"]]
    assert [t["id"] for t in list_tasks(owner, status="completed").data] == [done["id"]]
    assert len(list_tasks(owner, status="all").data) == 2


def test_the_list_filters_by_type_and_lead(owner):
    lead = create_lead(owner)
    create_task(owner, {"title": "general"})
    contact = list_tasks(owner, type="contact_lead").data
    assert [t["linkedLeadId"] for t in contact] == [lead["id"]]
    assert list_tasks(owner, leadId=str(uuid.uuid4())).data == []


def test_assignee_me_is_the_caller(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    mine = create_task(coach, {"title": "mine"}).data
    create_task(owner, {"title": "the owner's"})
    assert [t["id"] for t in list_tasks(coach, assignee="me").data] == [mine["id"]]
    assert list_tasks(coach, assignee="someone").status == 400


def test_assignee_a_user_id_or_unassigned_narrows_the_list(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    theirs = create_task(owner, {"title": "theirs", "assigneeUserId": str(coach.user.id)}).data
    nobodys = create_task(owner, {"title": "nobody's"}).data
    assert patch_task(owner, nobodys["id"], {"assigneeUserId": None}).status == 200
    create_task(owner, {"title": "the owner's"})
    assert [t["id"] for t in list_tasks(owner, assignee=str(coach.user.id)).data] == [theirs["id"]]
    assert [t["id"] for t in list_tasks(owner, assignee="unassigned").data] == [nobodys["id"]]


def test_pages_follow_due_date_then_id_with_undated_tasks_last(owner):
    made = [create_task(owner, {"title": f"d{day}", "dueDate": f"2026-05-{day:02d}"}).data["id"] for day in (3, 1, 2)]
    undated = [create_task(owner, {"title": f"u{i}"}).data["id"] for i in range(2)]
    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = list_tasks(owner, **query)
        assert page.status == 200, page.body
        seen += [t["id"] for t in page.data]
        cursor = page.body["nextCursor"]
        if cursor is None:
            break
    assert seen == [made[1], made[2], made[0], *sorted(undated)]


def test_a_page_costs_the_same_statements_whatever_its_size(owner):
    for i in range(10):
        create_lead(owner, f"Lead {i}")
    with count_statements(get_engine()) as log:
        assert len(list_tasks(owner, limit="10").data) == 10
    assert len(log) <= 2


def test_a_bad_cursor_is_refused(owner):
    assert list_tasks(owner, cursor="nope").error_code == "INVALID_CURSOR"


def test_completing_twice_is_harmless_and_cancelling_a_completed_task_conflicts(owner):
    task = create_task(owner, {"title": "t"}).data
    assert task_action(owner, task["id"], "complete").data["completedAt"] is not None
    assert task_action(owner, task["id"], "complete").status == 200
    refused = task_action(owner, task["id"], "cancel")
    assert (refused.status, refused.error_code) == (409, "TASK_CLOSED")


def test_cancel(owner):
    task = create_task(owner, {"title": "t"}).data
    data = task_action(owner, task["id"], "cancel").data
    assert (data["status"], data["cancelledAt"] is not None) == ("cancelled", True)


def test_patch_changes_only_what_was_sent(owner):
    task = create_task(owner, {"title": "t", "description": "d", "dueDate": "2026-05-01"}).data
    data = patch_task(owner, task["id"], {"priority": "high", "status": "in_progress", "dueDate": None}).data
    assert (data["title"], data["description"], data["priority"], data["status"], data["dueDate"]) == (
        "t",
        "d",
        "high",
        "in_progress",
        None,
    )


@pytest.mark.parametrize(
    "body",
    [{}, {"title": None}, {"status": "completed"}, {"priority": "urgent"}, {"title": ""}, {"linkedLeadId": None}],
)
def test_malformed_patches_are_refused(owner, body):
    task = create_task(owner, {"title": "t"}).data
    assert patch_task(owner, task["id"], body).status == 400


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"title": "x" * 256},
        {"title": "t", "type": "chore"},
        {"title": "t", "dueTime": "10:00"},
        {"title": "t", "dueDate": "tomorrow"},
        {"title": "t", "linkedLeadId": "not-a-uuid"},
        {"title": "t\u0000"},
    ],
)
def test_malformed_creates_are_refused(owner, body):
    assert create_task(owner, body).status == 400


def test_another_organizations_task_is_not_found(owner):
    other = make_caller(role="owner")
    task = create_task(other, {"title": "theirs"}).data
    for response in (
        task_action(owner, task["id"], "complete"),
        task_action(owner, task["id"], "cancel"),
        patch_task(owner, task["id"], {"title": "mine"}),
        task_action(owner, "not-a-uuid", "complete"),
    ):
        assert (response.status, response.error_code) == (404, "TASK_NOT_FOUND")


def test_a_task_for_another_organizations_lead_is_not_found(owner):
    other = make_caller(role="owner")
    lead = create_lead(other)
    for task_type in ("general", "contact_lead"):
        response = create_task(owner, {"title": "t", "type": task_type, "linkedLeadId": lead["id"]})
        assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")
    assert len(lead_tasks(lead["id"])) == 1  # only its own intake task


def test_another_organizations_tasks_are_never_listed(owner):
    other = make_caller(role="owner")
    create_task(other, {"title": "theirs"})
    assert list_tasks(owner, status="all").data == []


def test_a_plain_linked_task_leaves_the_follow_up_alone(owner):
    lead = create_lead(owner)
    response = create_task(owner, {"title": "Send the brochure", "type": "email", "linkedLeadId": lead["id"]})
    assert response.status == 201 and response.body["meta"]["merged"] is False
    assert len(lead_tasks(lead["id"], open_only=True)) == 2


@pytest.mark.parametrize("role", ["member"])
def test_members_cannot_use_tasks(owner, role):
    member = make_caller(role=role, organization=owner.organization)
    assert list_tasks(member).status == 403
    assert create_task(member, {"title": "t"}).status == 403


def test_lead_management_is_required():
    caller = make_caller(role="owner", features={})
    assert call_api("GET", tasks_path(caller.org_id), sub=caller.sub).error_code == "FEATURE_DISABLED"
