"""The auto-task of a new lead (G1 step 7, also G2): contact_lead, high, auto, due tomorrow in the
organization's timezone, for the oldest active owner. It never blocks the create."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import update

from leadcrm.directory.tables import memberships, organizations
from leadcrm.platform.db.engine import get_engine
from leadcrm.work import auto_tasks
from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import capture, lead_count, lead_rows, tasks_of
from tests.support.factories import make_caller, make_membership, make_organization, make_user


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating a lead publishes `lead.created` after commit; the bus exists."""


def _staff_create(caller, body):
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body)


def _set_timezone(org_id, timezone: str) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == org_id).values(timezone=timezone))


def _tomorrow_in(timezone: str) -> set:
    """Tomorrow there, allowing for a midnight passing while the test runs."""
    zone = ZoneInfo(timezone)
    return {
        (datetime.now(UTC) + lag).astimezone(zone).date() + timedelta(days=1)
        for lag in (timedelta(0), timedelta(seconds=-30))
    }


def test_a_staff_created_lead_gets_a_high_priority_contact_task_for_the_owner():
    owner = make_caller(role="owner")
    lead = _staff_create(owner, {"name": "Ada Lovelace"}).data
    [task] = tasks_of(owner.org_id)
    assert (task["type"], task["priority"], task["source"], task["status"]) == (
        "contact_lead",
        "high",
        "auto",
        "pending",
    )
    assert task["assignee_user_id"] == owner.user.id
    assert str(task["linked_lead_id"]) == lead["id"]
    assert task["title"] == "Contact new lead: Ada Lovelace"


def test_a_coach_creating_a_lead_still_gets_the_task_on_the_owner():
    owner = make_caller(role="owner")
    coach = make_user()
    make_membership(owner.organization, coach, role="coach")
    call_api("POST", leads_path(owner.org_id), sub=coach.auth_subject, body={"email": "ada@example.com"})
    [task] = tasks_of(owner.org_id)
    assert task["assignee_user_id"] == owner.user.id
    assert task["title"] == "Contact new lead: ada@example.com"


def test_a_public_capture_gets_the_task_too():
    owner = make_caller(role="owner")
    capture(owner.org_id, {"phone": "050-1234567"})
    [task] = tasks_of(owner.org_id)
    assert task["title"] == "Contact new lead: 050-1234567"
    assert task["linked_lead_id"] == lead_rows(owner.org_id)[0]["id"]


@pytest.mark.parametrize("timezone", ["Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Jerusalem", "UTC"])
def test_the_task_is_due_tomorrow_in_the_organizations_timezone(timezone):
    owner = make_caller(role="owner")
    _set_timezone(owner.org_id, timezone)
    _staff_create(owner, {"name": "Ada"})
    [task] = tasks_of(owner.org_id)
    assert task["due_date"] in _tomorrow_in(timezone)


def test_the_task_goes_to_the_oldest_active_owner():
    first_owner = make_caller(role="owner")
    org = first_owner.organization
    later_owner = make_user()
    make_membership(org, later_owner, role="owner")
    _staff_create(first_owner, {"name": "Ada"})
    assert tasks_of(org.id)[0]["assignee_user_id"] == first_owner.user.id


def test_an_owner_who_left_is_skipped_for_the_next_owner():
    first_owner = make_caller(role="owner")
    org = first_owner.organization
    next_owner = make_user()
    make_membership(org, next_owner, role="owner")
    with get_engine().begin() as conn:
        conn.execute(
            update(memberships).where(memberships.c.id == first_owner.membership.id).values(status="cancelled")
        )
    coach = make_caller(role="coach", organization=org)
    _staff_create(coach, {"name": "Ada"})
    assert tasks_of(org.id)[0]["assignee_user_id"] == next_owner.id


def test_without_an_owner_the_task_is_skipped_and_the_lead_created():
    coach = make_caller(role="coach")
    assert _staff_create(coach, {"name": "Ada"}).status == 201
    assert tasks_of(coach.org_id) == []
    assert lead_count(coach.org_id) == 1


def test_a_duplicate_makes_no_second_task():
    owner = make_caller(role="owner")
    capture(owner.org_id, {"email": "ada@example.com"})
    capture(owner.org_id, {"email": "ada@example.com"})
    assert len(tasks_of(owner.org_id)) == 1


def test_a_task_builder_that_raises_never_fails_the_staff_create(monkeypatch):
    owner = make_caller(role="owner")

    def broken(*args):
        raise RuntimeError("task service down")

    monkeypatch.setattr(auto_tasks, "_contact_task_insert", broken)
    response = _staff_create(owner, {"name": "Ada"})
    assert response.status == 201
    assert lead_count(owner.org_id) == 1
    assert tasks_of(owner.org_id) == []
    assert (response.data["nextActionAt"], response.data["nextActionType"]) == (None, None)  # no task, no seed


def test_a_task_builder_that_raises_never_fails_the_public_capture(monkeypatch):
    org = make_organization()
    owner = make_user()
    make_membership(org, owner, role="owner")

    def broken(*args):
        raise RuntimeError("task service down")

    monkeypatch.setattr(auto_tasks, "_contact_task_insert", broken)
    assert capture(org.id, {"name": "Ada"}).status == 201
    assert lead_count(org.id) == 1
    assert tasks_of(org.id) == []


def test_an_organization_with_an_unknown_timezone_still_gets_its_lead():
    owner = make_caller(role="owner")
    _set_timezone(owner.org_id, "Mars/Olympus_Mons")
    response = _staff_create(owner, {"name": "Ada"})
    assert response.status == 201
    assert lead_count(owner.org_id) == 1
    assert tasks_of(owner.org_id) == []
    # The rest of the create survived the failed savepoint: the lead and its first status event.
    detail = call_api("GET", leads_path(owner.org_id, response.data["id"]), sub=owner.sub).data
    assert any(entry["type"] == "status_changed" for entry in detail["timeline"])
