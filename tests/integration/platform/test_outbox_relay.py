"""A publish failure never fails the request; the relay job publishes what was left behind."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.outbox import BACKLOG_AGE_METRIC, FAILED_METRIC, PUBLISHED_METRIC, relay_unpublished
from leadcrm.platform.tables import outbox
from tests.support.api import call_api, leads_path
from tests.support.aws import make_event_bus, make_queue, route_bus_to_queue
from tests.support.factories import make_caller


@pytest.fixture
def task_lifecycle():
    from task_lifecycle.handler import lambda_handler

    return lambda_handler


def _create_lead_without_a_bus() -> dict:
    caller = make_caller()
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Ada Lovelace"})
    assert response.status == 201, response.body
    return response.data


def _emitted(captured_stdout: str, metric: str, unit: str) -> list[float]:
    """The values of `metric` in the EMF documents the relay printed (what CloudWatch turns into the metric)."""
    values = []
    for line in captured_stdout.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and metric in document:
            (directive,) = document["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "LeadCRM"
            assert directive["Metrics"] == [{"Name": metric, "Unit": unit}]
            value = document[metric]
            values.append(float(value[0] if isinstance(value, list) else value))
    return values


def _backlog_ages(captured_stdout: str) -> list[float]:
    return _emitted(captured_stdout, BACKLOG_AGE_METRIC, "Seconds")


def _outbox_row(lead_id: str) -> dict:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(outbox).where(outbox.c.aggregate_id == uuid.UUID(lead_id))).mappings().one())


def _backdate(lead_id: str, by: timedelta = timedelta(minutes=5)) -> None:
    with get_engine().begin() as conn:
        conn.execute(
            update(outbox)
            .where(outbox.c.aggregate_id == uuid.UUID(lead_id))
            .values(occurred_at=outbox.c.occurred_at - by)
        )


def _untried(lead_id: str) -> None:
    """The row as its request left it when it published it, or died between its commit and its publish:
    its attempt counted, no error, no stamp."""
    with get_engine().begin() as conn:
        conn.execute(
            update(outbox).where(outbox.c.aggregate_id == uuid.UUID(lead_id)).values(attempts=1, last_error=None)
        )


def _left_to_the_relay(lead_id: str) -> None:
    """The row as a request leaves it when it publishes none of its events (more than INLINE_PUBLISH_LIMIT),
    or a job's consumer on a bare transaction does: no attempt counted, no error, no stamp."""
    with get_engine().begin() as conn:
        conn.execute(
            update(outbox).where(outbox.c.aggregate_id == uuid.UUID(lead_id)).values(attempts=0, last_error=None)
        )


def test_a_lead_is_created_with_201_even_when_the_bus_cannot_be_reached():
    lead = _create_lead_without_a_bus()
    assert lead["status"] == "new"


def test_an_event_the_bus_did_not_take_stays_unpublished_in_the_outbox():
    lead = _create_lead_without_a_bus()
    row = _outbox_row(lead["id"])
    assert row["type"] == "lead.created"
    assert row["published_at"] is None


def test_the_relay_job_publishes_an_event_left_behind_once_the_bus_is_back(task_lifecycle, ctx):
    lead = _create_lead_without_a_bus()
    _backdate(lead["id"])
    make_event_bus()
    result = task_lifecycle({"job": "outbox_relay"}, ctx)
    assert result["job"] == "outbox_relay"
    assert result["published"] >= 1
    assert _outbox_row(lead["id"])["published_at"] is not None


def test_the_relayed_event_reaches_consumers_with_its_original_event_id(task_lifecycle, ctx):
    lead = _create_lead_without_a_bus()
    _backdate(lead["id"])
    queue = make_queue("leadcrm-task-lifecycle")
    route_bus_to_queue(make_event_bus(), queue)
    task_lifecycle({"job": "outbox_relay"}, ctx)
    details = [json.loads(m["Body"])["detail"] for m in queue.receive_all()]
    mine = [d for d in details if d["payload"]["leadId"] == lead["id"]]
    assert len(mine) == 1
    assert mine[0]["eventId"] == str(_outbox_row(lead["id"])["id"])
    assert mine[0]["type"] == "lead.created"


def test_a_publish_after_commit_the_bus_refuses_counts_the_attempt_and_keeps_the_error():
    lead = _create_lead_without_a_bus()
    row = _outbox_row(lead["id"])
    assert (row["published_at"], row["attempts"]) == (None, 1)
    assert "ResourceNotFoundException" in row["last_error"]


def test_the_relay_takes_an_event_its_request_failed_to_publish_without_waiting_for_the_grace():
    lead = _create_lead_without_a_bus()  # its request tried and failed: nobody else will publish it
    make_event_bus()
    relay_unpublished()
    assert _outbox_row(lead["id"])["published_at"] is not None


def test_the_relay_takes_an_event_left_to_it_without_waiting_for_the_grace():
    lead = _create_lead_without_a_bus()
    _left_to_the_relay(lead["id"])
    make_event_bus()
    relay_unpublished()
    assert _outbox_row(lead["id"])["published_at"] is not None


def test_the_relay_leaves_events_younger_than_its_grace_period_to_the_request():
    lead = _create_lead_without_a_bus()
    _untried(lead["id"])
    make_event_bus()
    relay_unpublished()
    assert _outbox_row(lead["id"])["published_at"] is None


def test_the_relay_with_no_grace_publishes_a_fresh_event():
    lead = _create_lead_without_a_bus()
    make_event_bus()
    relay_unpublished(grace=timedelta(0))
    assert _outbox_row(lead["id"])["published_at"] is not None


def test_a_relay_that_cannot_reach_the_bus_counts_the_attempt_and_keeps_the_error(task_lifecycle, ctx):
    lead = _create_lead_without_a_bus()
    _backdate(lead["id"])
    result = task_lifecycle({"job": "outbox_relay"}, ctx)
    assert result["failed"] >= 1
    row = _outbox_row(lead["id"])
    assert row["published_at"] is None
    assert row["attempts"] == 2  # its request's, then the relay's
    assert row["last_error"]


def test_a_relay_after_a_failed_one_still_publishes(task_lifecycle, ctx):
    lead = _create_lead_without_a_bus()
    _backdate(lead["id"])
    task_lifecycle({"job": "outbox_relay"}, ctx)
    make_event_bus()
    task_lifecycle({"job": "outbox_relay"}, ctx)
    row = _outbox_row(lead["id"])
    assert row["published_at"] is not None
    assert row["attempts"] == 3  # its request's, the failed relay's, the one that published it
    assert row["last_error"] is None


def test_a_relay_with_nothing_left_behind_publishes_nothing(event_bus, task_lifecycle, ctx):
    task_lifecycle({"job": "outbox_relay"}, ctx)  # whatever earlier tests left behind
    assert task_lifecycle({"job": "outbox_relay"}, ctx) == {"job": "outbox_relay", "published": 0, "failed": 0}
    with get_engine().connect() as conn:
        old_unpublished = conn.execute(
            select(func.count())
            .select_from(outbox)
            .where(outbox.c.published_at.is_(None), outbox.c.occurred_at < func.now() - timedelta(seconds=30))
        ).scalar_one()
    assert old_unpublished == 0


def test_an_unknown_scheduled_job_raises_value_error(task_lifecycle, ctx):
    with pytest.raises(ValueError, match="unknown scheduled job"):
        task_lifecycle({"job": "make_coffee"}, ctx)


def test_a_relay_that_cannot_reach_the_bus_reports_how_old_the_oldest_unpublished_event_is(task_lifecycle, ctx, capsys):
    lead = _create_lead_without_a_bus()
    _backdate(lead["id"], by=timedelta(minutes=10))
    capsys.readouterr()
    task_lifecycle({"job": "outbox_relay"}, ctx)
    (age,) = _backlog_ages(capsys.readouterr().out)
    assert age >= 600  # at least as old as this event (earlier tests may have left older ones)


def test_a_relay_that_drains_the_outbox_reports_a_backlog_age_of_zero(capsys):
    _create_lead_without_a_bus()
    make_event_bus()
    capsys.readouterr()
    relay_unpublished(grace=timedelta(0))
    assert _backlog_ages(capsys.readouterr().out) == [0.0]


def test_events_younger_than_the_grace_period_are_not_in_the_backlog_age(capsys):
    lead = _create_lead_without_a_bus()
    _untried(lead["id"])
    _backdate(lead["id"], by=timedelta(seconds=20))
    make_event_bus()
    capsys.readouterr()
    relay_unpublished()  # publishes what is older than its grace, leaves this one to its request
    (age,) = _backlog_ages(capsys.readouterr().out)
    assert _outbox_row(lead["id"])["published_at"] is None
    assert age == 0.0  # its request published it (unstamped) or is about to: nothing to alarm on


def test_an_event_left_unstamped_past_the_grace_is_republished_by_the_relay(capsys):
    lead = _create_lead_without_a_bus()
    _untried(lead["id"])  # as a request leaves it whether it published it or died first
    _backdate(lead["id"], by=timedelta(seconds=31))
    make_event_bus()
    relay_unpublished()
    assert _outbox_row(lead["id"])["published_at"] is not None


def test_a_relay_publishes_how_many_events_it_relayed(capsys):
    for _ in range(3):
        _create_lead_without_a_bus()
    make_event_bus()
    capsys.readouterr()
    result = relay_unpublished(grace=timedelta(0))
    out = capsys.readouterr().out
    assert result["published"] >= 3
    assert _emitted(out, PUBLISHED_METRIC, "Count") == [float(result["published"])]
    assert _emitted(out, FAILED_METRIC, "Count") == [0.0]


def test_a_relay_that_cannot_reach_the_bus_publishes_its_failures(capsys):
    lead = _create_lead_without_a_bus()
    _backdate(lead["id"])
    capsys.readouterr()
    result = relay_unpublished()
    out = capsys.readouterr().out
    assert result["failed"] >= 1
    assert _emitted(out, FAILED_METRIC, "Count") == [float(result["failed"])]
    assert _emitted(out, PUBLISHED_METRIC, "Count") == [0.0]
