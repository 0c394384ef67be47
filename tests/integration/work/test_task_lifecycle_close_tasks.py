"""Lead tasks close automatically: `lead.status_changed` into lost, converted or customer cancels the lead's
open linked tasks, once, in task_lifecycle; a failure there is logged and counted and never poisons the
queue; a lead that came back keeps its new tasks."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from tests.support.erase_helpers import (
    deliver,
    make_task,
    outbox_detail,
    outbox_rows,
    set_task_status,
    task_rows,
    task_status,
)
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import activities, create_lead, patch_lead, set_lead_columns


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _mark_lost(owner, lead_id) -> dict[str, Any]:
    """The real move (PATCH) and the `lead.status_changed` it wrote, as the bus would deliver it."""
    response = patch_lead(owner, lead_id, {"status": "lost", "lostReason": "price"})
    assert response.status == 200, response.body
    (row,) = outbox_rows(lead_id, "lead.status_changed")
    return outbox_detail(row)


def _status_change(org_id, lead_id, to_status: str, *, occurred_at: datetime | None = None) -> dict[str, Any]:
    return {
        "eventId": str(uuid.uuid4()),
        "type": "lead.status_changed",
        "organizationId": str(org_id),
        "aggregateId": str(lead_id),
        "occurredAt": (occurred_at or datetime.now(UTC)).isoformat(),
        "payload": {"leadId": str(lead_id), "fromStatus": "trial_booked", "toStatus": to_status},
    }


def test_a_lost_lead_has_its_open_linked_tasks_cancelled(task_lifecycle, owner):
    lead = create_lead(owner, "Closing Lead")
    (intake_task,) = task_rows(lead_id=lead["id"])  # the intake auto-task of the create
    manual = make_task(owner.org_id, lead_id=lead["id"], task_type="general", status="in_progress")
    assert deliver(task_lifecycle, _mark_lost(owner, lead["id"])) == {"batchItemFailures": []}
    assert (task_status(intake_task["id"]), task_status(manual)) == ("cancelled", "cancelled")
    assert all(row["cancelled_at"] is not None for row in task_rows(lead_id=lead["id"]))


@pytest.mark.parametrize("to_status", ["converted", "customer"])
def test_a_won_lead_has_its_open_linked_tasks_cancelled(task_lifecycle, owner, to_status):
    lead = create_lead(owner, "Won Lead")
    set_lead_columns(lead["id"], status=to_status)
    deliver(task_lifecycle, _status_change(owner.org_id, lead["id"], to_status))
    assert {row["status"] for row in task_rows(lead_id=lead["id"])} == {"cancelled"}


@pytest.mark.parametrize("to_status", ["contacted", "callback", "trial_booked", "frozen"])
def test_a_lead_that_stays_open_or_is_frozen_keeps_its_tasks(task_lifecycle, owner, to_status):
    lead = create_lead(owner, "Open Lead")
    set_lead_columns(lead["id"], status=to_status)
    deliver(task_lifecycle, _status_change(owner.org_id, lead["id"], to_status))
    assert {row["status"] for row in task_rows(lead_id=lead["id"])} == {"pending"}


def test_final_deleted_and_unlinked_tasks_are_left_alone(task_lifecycle, owner):
    lead = create_lead(owner, "Busy Lead")
    done = make_task(owner.org_id, lead_id=lead["id"], task_type="general", status="completed")
    deleted = make_task(owner.org_id, lead_id=lead["id"], task_type="general", deleted=True)
    unlinked = make_task(owner.org_id, title="Call Busy Lead")
    deliver(task_lifecycle, _mark_lost(owner, lead["id"]))
    assert (task_status(done), task_status(deleted), task_status(unlinked)) == ("completed", "pending", "pending")


def test_one_tasks_closed_entry_names_the_cancelled_tasks_by_id(task_lifecycle, owner):
    lead = create_lead(owner, "Timeline Lead")
    detail = _mark_lost(owner, lead["id"])
    deliver(task_lifecycle, detail)
    (entry,) = activities(lead["id"], "tasks_closed")
    assert entry["payload"] == {
        "reason": "lead_status",
        "status": "lost",
        "taskIds": sorted(str(row["id"]) for row in task_rows(lead_id=lead["id"])),
        "eventId": detail["eventId"],
    }
    assert entry["source_event_id"] == uuid.UUID(detail["eventId"])


def test_a_redelivered_transition_cancels_and_logs_nothing_more(task_lifecycle, owner):
    lead = create_lead(owner, "Redelivered Lead")
    detail = _mark_lost(owner, lead["id"])
    deliver(task_lifecycle, detail)
    (task,) = task_rows(lead_id=lead["id"])
    set_task_status(task["id"], "pending")  # someone re-opened it by hand between deliveries
    for _ in range(3):
        assert deliver(task_lifecycle, detail) == {"batchItemFailures": []}
    assert task_status(task["id"]) == "pending"
    assert len(activities(lead["id"], "tasks_closed")) == 1


def test_a_duplicate_in_the_same_batch_is_handled_once(task_lifecycle, owner):
    lead = create_lead(owner, "Twice Lead")
    detail = _mark_lost(owner, lead["id"])
    assert deliver(task_lifecycle, detail, detail) == {"batchItemFailures": []}
    assert len(activities(lead["id"], "tasks_closed")) == 1


def test_a_lead_that_came_back_keeps_its_new_tasks_when_an_old_change_arrives_late(task_lifecycle, owner):
    lead = create_lead(owner, "Returning Lead")
    detail = _mark_lost(owner, lead["id"])
    set_lead_columns(lead["id"], status="new")  # reopened before the event was delivered
    deliver(task_lifecycle, detail)
    assert {row["status"] for row in task_rows(lead_id=lead["id"])} == {"pending"}
    assert activities(lead["id"], "tasks_closed") == []


def test_a_task_created_after_the_change_is_not_cancelled(task_lifecycle, owner):
    lead = create_lead(owner, "Late Task Lead")
    detail = _mark_lost(owner, lead["id"])
    later = make_task(owner.org_id, lead_id=lead["id"], task_type="general")
    detail["occurredAt"] = (datetime.fromisoformat(detail["occurredAt"]) - timedelta(seconds=1)).isoformat()
    set_lead_columns(lead["id"], status="lost")
    deliver(task_lifecycle, detail)
    assert task_status(later) == "pending"


def test_a_cancelled_task_stays_cancelled_when_the_lead_is_reopened(task_lifecycle, owner):
    lead = create_lead(owner, "Reopened Lead")
    deliver(task_lifecycle, _mark_lost(owner, lead["id"]))
    response = patch_lead(owner, lead["id"], {"status": "new"})
    assert response.status == 200, response.body
    reopened = [row for row in outbox_rows(lead["id"], "lead.status_changed") if row["payload"]["toStatus"] == "new"]
    deliver(task_lifecycle, *(outbox_detail(row) for row in reopened))
    assert {row["status"] for row in task_rows(lead_id=lead["id"])} == {"cancelled"}


def test_an_erased_lead_is_acknowledged_without_changes(task_lifecycle, owner):
    detail = _status_change(owner.org_id, uuid.uuid4(), "lost")
    assert deliver(task_lifecycle, detail) == {"batchItemFailures": []}


def test_another_organizations_lead_is_not_touched(task_lifecycle, owner):
    lead = create_lead(owner, "Foreign Lead")
    set_lead_columns(lead["id"], status="lost")
    stranger = make_caller(role="owner")
    deliver(task_lifecycle, _status_change(stranger.org_id, lead["id"], "lost"))
    assert {row["status"] for row in task_rows(lead_id=lead["id"])} == {"pending"}


# -- failures --------------------------------------------------------------------------------------------


def _emitted_metrics(output: str) -> list[dict[str, Any]]:
    metrics = []
    for line in output.splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict) and "_aws" in parsed:
            metrics.append(parsed)
    return metrics


def test_a_malformed_event_is_logged_counted_and_acknowledged(task_lifecycle, owner, capsys):
    detail = _status_change(owner.org_id, uuid.uuid4(), "lost")
    detail["payload"]["leadId"] = "not-a-uuid"
    assert deliver(task_lifecycle, detail) == {"batchItemFailures": []}
    (metric,) = [m for m in _emitted_metrics(capsys.readouterr().out) if "LeadTaskCloseFailed" in m]
    assert metric["LeadTaskCloseFailed"] == [1.0] or metric["LeadTaskCloseFailed"] == 1.0
    assert metric["failure"] == "malformed"
    assert metric["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "LeadCRM"


def test_a_permanent_failure_is_acknowledged_and_leaves_the_tasks_and_the_batch_alone(
    task_lifecycle, owner, monkeypatch, capsys
):
    from leadcrm.work import task_closing as lead_task_closing

    failing = create_lead(owner, "Failing Lead")
    healthy = create_lead(owner, "Healthy Lead")
    failing_detail, healthy_detail = _mark_lost(owner, failing["id"]), _mark_lost(owner, healthy["id"])
    real = lead_task_closing.close_open_tasks

    def close_or_break(conn, event_id, organization_id, lead_id, occurred_at):
        if str(lead_id) == failing["id"]:
            raise RuntimeError("a bug")
        return real(conn, event_id, organization_id, lead_id, occurred_at)

    monkeypatch.setattr(lead_task_closing, "close_open_tasks", close_or_break)
    assert deliver(task_lifecycle, failing_detail, healthy_detail) == {"batchItemFailures": []}
    assert {row["status"] for row in task_rows(lead_id=failing["id"])} == {"pending"}
    assert {row["status"] for row in task_rows(lead_id=healthy["id"])} == {"cancelled"}
    (metric,) = [m for m in _emitted_metrics(capsys.readouterr().out) if "LeadTaskCloseFailed" in m]
    assert metric["failure"] == "permanent"


class _Deadlock(Exception):
    """What pg8000 raises for a deadlock: the server's error fields as a dict."""

    def __init__(self) -> None:
        super().__init__({"S": "ERROR", "C": "40P01", "M": "deadlock detected"})


def test_a_transient_database_error_is_retried_through_sqs(task_lifecycle, owner, monkeypatch, capsys):
    from leadcrm.work import task_closing as lead_task_closing

    lead = create_lead(owner, "Deadlocked Lead")
    other = create_lead(owner, "Other Lead")
    detail, other_detail = _mark_lost(owner, lead["id"]), _mark_lost(owner, other["id"])
    real = lead_task_closing.close_open_tasks

    def deadlock_once(conn, event_id, organization_id, lead_id, occurred_at):
        if str(lead_id) == lead["id"]:
            raise OperationalError("UPDATE tasks", {}, _Deadlock())
        return real(conn, event_id, organization_id, lead_id, occurred_at)

    monkeypatch.setattr(lead_task_closing, "close_open_tasks", deadlock_once)
    first = deliver(task_lifecycle, detail, other_detail)
    assert len(first["batchItemFailures"]) == 1  # only the deadlocked record goes back to the queue
    assert {row["status"] for row in task_rows(lead_id=other["id"])} == {"cancelled"}
    (metric,) = [m for m in _emitted_metrics(capsys.readouterr().out) if "LeadTaskCloseFailed" in m]
    assert metric["failure"] == "transient"

    monkeypatch.setattr(lead_task_closing, "close_open_tasks", real)  # the redelivery succeeds
    assert deliver(task_lifecycle, detail) == {"batchItemFailures": []}
    assert {row["status"] for row in task_rows(lead_id=lead["id"])} == {"cancelled"}


def test_the_status_change_itself_never_waits_for_the_tasks(owner):
    """The move commits on its own: the tasks close only when task_lifecycle gets the event."""
    lead = create_lead(owner, "Async Lead")
    _mark_lost(owner, lead["id"])
    assert {row["status"] for row in task_rows(lead_id=lead["id"])} == {"pending"}
