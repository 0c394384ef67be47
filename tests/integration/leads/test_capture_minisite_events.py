"""The platform's minisite events (`minisite_event.published|updated|archived`, detail {organizationId,
eventId, title}) are kept in `minisite_events` by task_lifecycle, so public captures can be checked against
them. Platform detail is not our outbox shape: no eventId/payload wrapper."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.aws import EVENT_BUS, aws_client
from tests.support.capture_helpers import campaigns_of, capture, lead_rows, minisite_event_row
from tests.support.events import eventbridge_envelope, sqs_event, sqs_record, sqs_record_from_message
from tests.support.factories import make_organization


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


def _deliver(task_lifecycle, detail_type: str, detail: dict) -> dict:
    """One platform event as task_lifecycle receives it: an SQS record whose body is the EventBridge event."""
    envelope = eventbridge_envelope(detail_type, detail, source="platform.local")
    return task_lifecycle(sqs_event(sqs_record(envelope, queue_name="leadcrm-task-lifecycle")))


def _detail(org_id, event_id, title="Open day") -> dict:
    return {"organizationId": str(org_id), "eventId": str(event_id), "title": title}


def test_a_published_event_is_kept_for_its_organization(task_lifecycle):
    org, event_id = make_organization(), uuid.uuid4()
    result = _deliver(task_lifecycle, "minisite_event.published", _detail(org.id, event_id, "Summer open day"))
    assert result == {"batchItemFailures": []}
    row = minisite_event_row(event_id)
    assert (row["organization_id"], row["title"], row["archived_at"], row["campaign_id"]) == (
        org.id,
        "Summer open day",
        None,
        None,
    )


def test_a_redelivery_keeps_one_row(task_lifecycle):
    org, event_id = make_organization(), uuid.uuid4()
    for _ in range(2):
        _deliver(task_lifecycle, "minisite_event.published", _detail(org.id, event_id))
    assert minisite_event_row(event_id)["title"] == "Open day"


def test_an_update_renames_the_event(task_lifecycle):
    org, event_id = make_organization(), uuid.uuid4()
    _deliver(task_lifecycle, "minisite_event.published", _detail(org.id, event_id, "Open day"))
    _deliver(task_lifecycle, "minisite_event.updated", _detail(org.id, event_id, "Open day (moved to Sunday)"))
    assert minisite_event_row(event_id)["title"] == "Open day (moved to Sunday)"


def test_an_update_for_an_event_never_seen_creates_it(task_lifecycle):
    org, event_id = make_organization(), uuid.uuid4()
    _deliver(task_lifecycle, "minisite_event.updated", _detail(org.id, event_id))
    assert minisite_event_row(event_id)["organization_id"] == org.id


def test_archiving_sets_archived_at_once_and_a_late_update_does_not_unarchive(task_lifecycle):
    org, event_id = make_organization(), uuid.uuid4()
    _deliver(task_lifecycle, "minisite_event.published", _detail(org.id, event_id))
    _deliver(task_lifecycle, "minisite_event.archived", _detail(org.id, event_id))
    archived_at = minisite_event_row(event_id)["archived_at"]
    assert archived_at is not None
    _deliver(task_lifecycle, "minisite_event.archived", _detail(org.id, event_id))
    _deliver(task_lifecycle, "minisite_event.updated", _detail(org.id, event_id, "Renamed"))
    row = minisite_event_row(event_id)
    assert (row["archived_at"], row["title"]) == (archived_at, "Renamed")


def test_an_event_cannot_be_moved_to_another_organization(task_lifecycle):
    org, other, event_id = make_organization(), make_organization(), uuid.uuid4()
    _deliver(task_lifecycle, "minisite_event.published", _detail(org.id, event_id, "Mine"))
    _deliver(task_lifecycle, "minisite_event.updated", _detail(other.id, event_id, "Hijacked"))
    row = minisite_event_row(event_id)
    assert (row["organization_id"], row["title"]) == (org.id, "Mine")


@pytest.mark.parametrize(
    "detail",
    [
        {"eventId": str(uuid.uuid4()), "title": "No organization"},
        {"organizationId": "not-a-uuid", "eventId": str(uuid.uuid4()), "title": "x"},
        {"organizationId": str(uuid.uuid4()), "eventId": str(uuid.uuid4()), "title": "Unknown organization"},
        {"organizationId": str(uuid.uuid4())},
    ],
    ids=["no-org", "bad-org", "unknown-org", "no-event-id"],
)
def test_a_malformed_or_foreign_event_is_acknowledged_and_dropped(task_lifecycle, detail):
    result = _deliver(task_lifecycle, "minisite_event.published", detail)
    assert result == {"batchItemFailures": []}
    if "eventId" in detail:
        assert minisite_event_row(uuid.UUID(detail["eventId"])) is None


def test_an_event_without_a_title_gets_a_placeholder(task_lifecycle):
    org, event_id = make_organization(), uuid.uuid4()
    _deliver(task_lifecycle, "minisite_event.published", {"organizationId": str(org.id), "eventId": str(event_id)})
    assert minisite_event_row(event_id)["title"] == "Minisite event"


def test_a_platform_event_put_on_the_bus_reaches_the_table_and_a_capture_resolves_its_campaign(
    lifecycle_queue, task_lifecycle
):
    """As `POST /_local/events` does it: source platform.local, detail exactly as posted."""
    org, event_id = make_organization(), uuid.uuid4()
    aws_client("events").put_events(
        Entries=[
            {
                "EventBusName": EVENT_BUS,
                "Source": "platform.local",
                "DetailType": "minisite_event.published",
                "Detail": json.dumps(_detail(org.id, event_id, "Yoga retreat")),
            }
        ]
    )
    messages = lifecycle_queue.receive_all()
    assert len(messages) == 1
    records = [sqs_record_from_message(m, queue_name=lifecycle_queue.name) for m in messages]
    assert task_lifecycle(sqs_event(*records)) == {"batchItemFailures": []}

    capture(org.id, {"email": "ada@example.com", "minisiteEventId": str(event_id)})
    [hook] = campaigns_of(org.id)
    assert (hook["name"], hook["channel"], hook["external_ref"]) == ("Yoga retreat", "minisite_event", str(event_id))
    assert lead_rows(org.id)[0]["campaign_id"] == hook["id"]


@pytest.mark.parametrize("detail_type", ["minisite_event.published", "minisite_event.archived"])
def test_a_redelivery_that_changes_nothing_writes_nothing(task_lifecycle, detail_type):
    from datetime import timedelta

    from leadcrm.platform import clock

    org, event_id = make_organization(), uuid.uuid4()
    _deliver(task_lifecycle, detail_type, _detail(org.id, event_id))
    first = minisite_event_row(event_id)
    try:
        clock.advance(timedelta(minutes=5))
        _deliver(task_lifecycle, detail_type, _detail(org.id, event_id))
    finally:
        clock.reset()
    assert minisite_event_row(event_id)["updated_at"] == first["updated_at"]
