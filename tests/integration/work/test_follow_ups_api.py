"""A lead's follow-up IS its task (spec "One object"): PUT / DELETE …/follow-up and the task side."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import (
    create_task,
    delete_follow_up,
    lead_tasks,
    patch_task,
    put_follow_up,
    set_timezone,
    task_action,
)
from tests.support.lead_moves_helpers import activities, create_lead, lead_row, set_lead_columns

JERUSALEM = ZoneInfo("Asia/Jerusalem")


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes after commit; the bus exists."""


@pytest.fixture
def owner():
    caller = make_caller(role="owner")
    set_timezone(caller.org_id, "Asia/Jerusalem")
    return caller


def _local(days: int, hour: int, minute: int = 0) -> datetime:
    day = datetime.now(JERUSALEM).date() + timedelta(days=days)
    return datetime.combine(day, time(hour, minute), tzinfo=JERUSALEM)


def _body(at: datetime, follow_up_type: str = "call", note: str | None = None) -> dict:
    body = {"at": at.isoformat(), "type": follow_up_type}
    if note is not None:
        body["note"] = note
    return body


def test_a_new_lead_gets_the_intake_call_seed_and_its_task_stands_for_it(owner):
    lead = create_lead(owner)
    row = lead_row(lead["id"])
    assert (row["next_action_type"], row["next_action_note"]) == ("call", None)
    assert row["next_action_at"] == row["created_at"]
    [task] = lead_tasks(lead["id"])
    task_action(owner, task["id"], "complete")
    assert lead_row(lead["id"])["next_action_at"] is None
    assert activities(lead["id"], "follow_up_cleared")[0]["payload"]["via"] == "task_completed"


def test_setting_a_follow_up_moves_the_leads_open_contact_task_to_its_org_local_date_and_time(owner):
    lead = create_lead(owner)
    at = _local(3, 14, 30)
    response = put_follow_up(owner, lead["id"], _body(at, "whatsapp", "send the price list"))
    assert response.status == 200, response.body
    assert response.data["nextActionType"] == "whatsapp"
    assert response.data["nextActionNote"] == "send the price list"
    [task] = lead_tasks(lead["id"], open_only=True)
    assert (task["due_date"], task["due_time"]) == (at.date(), time(14, 30))
    assert len(lead_tasks(lead["id"])) == 1  # the intake task moved: no second task


def test_a_follow_up_at_local_midnight_makes_a_whole_day_task(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], _body(_local(2, 0)))
    [task] = lead_tasks(lead["id"], open_only=True)
    assert task["due_time"] is None


def test_setting_it_again_moves_the_same_task(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], _body(_local(1, 9)))
    put_follow_up(owner, lead["id"], _body(_local(5, 11)))
    [task] = lead_tasks(lead["id"])
    assert task["due_date"] == _local(5, 11).date()
    assert [a["payload"]["type"] for a in activities(lead["id"], "follow_up_set")] == ["call", "call"]


def test_a_lead_without_a_task_gets_one_for_its_owner(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    lead = create_lead(coach, assigneeUserId=str(coach.user.id))
    for task in lead_tasks(lead["id"]):
        task_action(owner, task["id"], "cancel")
    put_follow_up(owner, lead["id"], _body(_local(1, 10)))
    [task] = lead_tasks(lead["id"], open_only=True)
    assert (task["type"], task["assignee_user_id"]) == ("contact_lead", coach.user.id)


def test_clearing_the_follow_up_cancels_its_task(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], _body(_local(1, 10)))
    response = delete_follow_up(owner, lead["id"])
    assert response.status == 200
    assert response.data["nextActionAt"] is None
    assert [t["status"] for t in lead_tasks(lead["id"])] == ["cancelled"]
    assert len(activities(lead["id"], "follow_up_cleared")) == 1


def test_clearing_when_there_is_none_changes_nothing(owner):
    lead = create_lead(owner)
    delete_follow_up(owner, lead["id"])
    assert delete_follow_up(owner, lead["id"]).status == 200
    assert len(activities(lead["id"], "follow_up_cleared")) == 1


def test_completing_the_task_that_stands_for_the_follow_up_clears_it(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], _body(_local(2, 10)))
    [task] = lead_tasks(lead["id"], open_only=True)
    assert task_action(owner, task["id"], "complete").data["status"] == "completed"
    assert lead_row(lead["id"])["next_action_at"] is None


def test_rescheduling_the_task_moves_the_follow_up(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], _body(_local(2, 10)))
    [task] = lead_tasks(lead["id"], open_only=True)
    new_day = _local(6, 10).date()
    response = patch_task(owner, task["id"], {"dueDate": new_day.isoformat(), "dueTime": "16:45"})
    assert response.status == 200, response.body
    moved = lead_row(lead["id"])["next_action_at"].astimezone(JERUSALEM)
    assert (moved.date(), moved.time()) == (new_day, time(16, 45))
    assert activities(lead["id"], "follow_up_set")[-1]["payload"]["via"] == "task_rescheduled"


def test_a_linked_task_that_does_not_stand_for_the_follow_up_never_touches_it(owner):
    lead = create_lead(owner)
    [task] = lead_tasks(lead["id"])
    # Someone moved the follow-up past the task's date without the sync (a task from before it).
    later = _local(9, 12)
    set_lead_columns(lead["id"], next_action_at=later, next_action_type="email", next_action_note="quote")
    task_action(owner, task["id"], "complete")
    row = lead_row(lead["id"])
    assert (row["next_action_at"], row["next_action_type"]) == (later, "email")
    patch = patch_task(owner, lead_tasks(lead["id"])[0]["id"], {"title": "x"})
    assert patch.error_code == "TASK_CLOSED"


def test_a_follow_up_task_keeps_a_due_date(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], _body(_local(2, 10)))
    [task] = lead_tasks(lead["id"], open_only=True)
    assert patch_task(owner, task["id"], {"dueDate": None}).error_code == "FOLLOW_UP_TASK_NEEDS_DUE_DATE"


def test_creating_a_contact_task_for_a_lead_merges_into_its_follow_up(owner):
    lead = create_lead(owner)
    due = (datetime.now(JERUSALEM).date() + timedelta(days=4)).isoformat()
    response = create_task(
        owner, {"title": "Call about prices", "type": "contact_lead", "linkedLeadId": lead["id"], "dueDate": due}
    )
    assert response.status == 201, response.body
    assert response.body["meta"]["merged"] is True
    [task] = lead_tasks(lead["id"])
    assert (str(task["id"]), task["title"], task["due_date"]) == (
        response.data["id"],
        "Call about prices",
        date.fromisoformat(due),
    )
    row = lead_row(lead["id"])
    assert row["next_action_at"].astimezone(JERUSALEM).date() == date.fromisoformat(due)
    assert row["next_action_type"] == "call"


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_another_organizations_lead_is_not_found(owner, method):
    other = make_caller(role="owner")
    lead = create_lead(other)
    if method == "PUT":
        response = put_follow_up(owner, lead["id"], _body(_local(1, 9)))
    else:
        response = delete_follow_up(owner, lead["id"])
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")
    assert lead_row(lead["id"])["next_action_at"] == lead_row(lead["id"])["created_at"]


@pytest.mark.parametrize(
    "body",
    [
        {"at": "2026-03-01T10:00:00", "type": "call"},  # no offset
        {"at": "2026-03-01T10:00:00Z", "type": "fax"},
        {"at": "2026-03-01T10:00:00Z", "type": "call", "note": "x" * 256},
        {"type": "call"},
        {"at": "not a date", "type": "call"},
        {"at": "2026-03-01T10:00:00Z", "type": "call", "extra": 1},
    ],
)
def test_malformed_follow_ups_are_refused(owner, body):
    lead = create_lead(owner)
    assert put_follow_up(owner, lead["id"], body).status == 400


def test_a_member_cannot_set_a_follow_up(owner):
    lead = create_lead(owner)
    member = make_caller(role="member", organization=owner.organization)
    assert put_follow_up(member, lead["id"], _body(_local(1, 9))).status == 403


def test_an_unknown_lead_id_is_not_found(owner):
    assert put_follow_up(owner, "not-a-uuid", _body(_local(1, 9))).status == 404


def test_without_an_owner_there_is_neither_intake_task_nor_seed():
    coach = make_caller(role="coach")
    lead = create_lead(coach)
    assert lead["nextActionAt"] is None
    assert lead_tasks(lead["id"]) == []
    assert lead_row(lead["id"])["next_action_at"] is None


def test_the_create_answer_shows_the_seed_it_wrote(owner):
    lead = create_lead(owner)
    assert (lead["nextActionType"], lead["nextActionAt"] is not None) == ("call", True)
