"""The return call (spec "Returning leads"): a reopened lead is due a call now; its task is synced after commit
(`follow_ups.sync_return_call`, the `lead.returned` consumer), and the first real contact retires it."""

from __future__ import annotations

import pytest

from leadcrm.platform.db.engine import get_engine
from leadcrm.work.follow_ups import sync_return_call
from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import lead_tasks, task_action, touch
from tests.support.lead_moves_helpers import create_lead, lead_row, outbox_events
from tests.support.returning_helpers import close_lead, reopen


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Reopening publishes after commit; the bus exists."""


def _returned_lead(owner):
    lead = create_lead(owner)
    for task in lead_tasks(lead["id"]):  # what the task lifecycle does when the lead is lost
        task_action(owner, task["id"], "cancel")
    close_lead(lead["id"])
    assert reopen(owner, lead["id"]).status == 200
    [event] = outbox_events(lead["id"], "lead.returned")
    detail = {
        "eventId": str(event["id"]),
        "type": event["type"],
        "organizationId": str(event["organization_id"]),
        "aggregateId": str(event["aggregate_id"]),
        "payload": event["payload"],
    }
    return lead, detail


def _deliver(detail) -> bool:
    with get_engine().begin() as conn:
        return sync_return_call(conn, detail)


def test_the_return_call_gets_a_task_once_however_often_the_event_arrives():
    owner = make_caller(role="owner")
    lead, detail = _returned_lead(owner)
    assert _deliver(detail) is True
    assert _deliver(detail) is False
    [task] = lead_tasks(lead["id"], open_only=True)
    assert (task["type"], task["source"], task["priority"]) == ("contact_lead", "auto", "high")
    assert task["assignee_user_id"] == owner.user.id  # the Sales actor took the unowned lead


def test_the_first_real_contact_retires_the_return_call_and_its_task():
    owner = make_caller(role="owner")
    lead, detail = _returned_lead(owner)
    _deliver(detail)
    touch(owner, lead["id"], {"channel": "call", "outcome": "contacted"})
    assert lead_row(lead["id"])["next_action_at"] is None
    assert lead_tasks(lead["id"], open_only=True) == []


def test_a_follow_up_set_since_the_return_is_left_alone():
    owner = make_caller(role="owner")
    lead, detail = _returned_lead(owner)
    touch(owner, lead["id"], {"channel": "call", "outcome": "contacted"})  # retires the return call first
    assert _deliver(detail) is False
    assert lead_tasks(lead["id"], open_only=True) == []


def test_lead_returned_is_routed_to_the_return_call_sync():
    from leadcrm.wiring import EVENT_REACTIONS as _HANDLERS
    from leadcrm.work import follow_ups

    assert _HANDLERS["lead.returned"].target is follow_ups.sync_return_call  # imported on first use (wiring)
