"""Conversions API for CRM: a Lead Ads lead's stage changes reach the organization's Meta dataset as CRM events.

Everything runs as in AWS: the lead arrives through graph_fetch and ingestion; its domain events go through the bus
to the task_lifecycle queue (recorded, then handed to the sender after a second check); the meta_events function
POSTs each event to the Graph stand-in and queues Meta's answer for ingestion, which writes it on the lead's
timeline. `_drain` plays every queue until all are empty."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest
from sqlalchemy import select

from leadcrm.ingestion.tables import meta_crm_events
from leadcrm.leads import pseudonym_tokens
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.aws import Queue
from tests.support.capture_helpers import activities_of
from tests.support.events import lambda_context, sqs_event, sqs_record, sqs_record_from_message
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    connect_page,
    deliver_leadgen,
    fresh_id,
    graph_lead,
    graph_stand_in,
    leadgen_message,
)


@pytest.fixture
def queues(event_bus, lifecycle_queue, ingestion_queue, meta_events_queue, monkeypatch) -> dict[str, Queue]:
    meta_events = meta_events_queue
    monkeypatch.delenv("PSEUDONYM_SECRET_ARN", raising=False)
    monkeypatch.setenv("PSEUDONYM_KEY", "test-pseudonym-key")
    pseudonym_tokens.forget()
    yield {"task_lifecycle": lifecycle_queue, "meta_events": meta_events, "ingestion": ingestion_queue}
    pseudonym_tokens.forget()


@pytest.fixture
def graph(monkeypatch):
    with graph_stand_in(monkeypatch) as stand_in:
        yield stand_in


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def page(owner) -> tuple[str, str]:
    """(page id, connection id) of a connected page."""
    page_id = fresh_id()
    connection = connect_page(owner, page_id, token="page-token-of-the-studio")
    return page_id, connection["id"]


def _handler(function: str) -> Any:
    if function == "task_lifecycle":
        from task_lifecycle.handler import lambda_handler
    elif function == "meta_events":
        from meta_events.handler import lambda_handler
    else:
        from ingestion.handler import lambda_handler
    return lambda_handler


def _drain(queues: dict[str, Queue], *, only: tuple[str, ...] | None = None, rounds: int = 8) -> list[dict]:
    """Every queue's messages to its function, round after round, until none is left; the batch responses."""
    responses = []
    for _ in range(rounds):
        moved = False
        for function, queue in queues.items():
            if only is not None and function not in only:
                continue
            messages = queue.receive_all()
            if messages:
                moved = True
                records = [sqs_record_from_message(m, queue_name=queue.name) for m in messages]
                responses.append(_handler(function)(sqs_event(*records), lambda_context(f"leadcrm-{function}")))
        if not moved:
            break
    return responses


def _settings(owner, connection_id: str, **body: Any):
    return call_api(
        "PUT",
        f"/organizations/{owner.org_id}/integrations/meta/{connection_id}/crm-events",
        sub=owner.sub,
        body={"datasetId": "1234567890123456", "enabled": True, **body},
    )


def _meta_lead(graph, page_id: str, **lead: Any) -> tuple[str, str]:
    """A Lead Ads lead taken in; (lead id, leadgen id)."""
    leadgen_id = fresh_id()
    graph.register(graph_lead(leadgen_id, **lead))
    assert deliver_leadgen(leadgen_message(page_id, leadgen_id)) == {"batchItemFailures": []}
    lead_id = max(lead_rows_by_created(page_id), key=lambda r: r["created_at"])["id"]
    return str(lead_id), leadgen_id


def lead_rows_by_created(page_id: str) -> list[dict[str, Any]]:
    from sqlalchemy import text

    with get_engine().connect() as conn:
        rows = conn.execute(
            text(
                "SELECT l.id, l.created_at FROM leads l JOIN lead_receipts r ON r.lead_id = l.id "
                "WHERE r.payload->>'pageId' = :p"
            ),
            {"p": page_id},  # fmt: skip
        ).mappings()
        return [dict(r) for r in rows]


def _rows(lead_id: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        query = select(meta_crm_events).where(meta_crm_events.c.lead_id == uuid.UUID(lead_id))
        return [dict(r) for r in conn.execute(query.order_by(meta_crm_events.c.created_at)).mappings()]


def _sent(graph, dataset_id: str = "1234567890123456") -> list[dict[str, Any]]:
    return [r["event"] for r in graph.recorded_events() if r["datasetId"] == dataset_id]


def _move(owner, lead_id: str, status: str) -> None:
    response = call_api("PATCH", leads_path(owner.org_id, lead_id), sub=owner.sub, body={"status": status})
    assert response.status == 200, response.body


# --- what is sent ------------------------------------------------------------------------------------------------


def test_a_meta_leads_first_stage_is_sent_as_a_crm_event_with_its_leadgen_id(queues, graph, owner, page):
    assert _settings(owner, page[1]).status == 200
    lead_id, leadgen_id = _meta_lead(graph, page[0])

    _drain(queues)

    (event,) = _sent(graph)
    assert event["event_name"] == "New"
    assert event["user_data"] == {"lead_id": int(leadgen_id)}
    assert event["action_source"] == "system_generated"
    assert event["custom_data"] == {"event_source": "crm", "lead_event_source": "LeadCRM"}
    assert [r["status"] for r in _rows(lead_id)] == ["sent"]


def test_the_event_is_sent_with_the_connections_own_token(queues, graph, owner, page):
    _settings(owner, page[1])
    _meta_lead(graph, page[0])
    _drain(queues)
    assert [e["datasetId"] for e in graph.recorded_events()] == ["1234567890123456"]


def test_the_timeline_shows_what_was_sent_and_metas_answer(queues, graph, owner, page):
    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues)

    (entry,) = activities_of(lead_id, "meta_crm_event_sent")
    assert entry["payload"]["eventName"] == "New"
    assert entry["payload"]["datasetId"] == "1234567890123456"
    assert entry["payload"]["sent"] is True
    assert entry["payload"]["answer"]["eventsReceived"] == 1
    assert entry["payload"]["userData"] == ["lead_id"]


def test_the_organizations_name_for_a_stage_is_the_event_name(queues, graph, owner, page):
    from tests.support.lead_moves_helpers import default_pipeline

    contacted = str(default_pipeline(owner.org_id).stage("contacted"))
    _settings(owner, page[1], stageEventNames={contacted: "Marketing Qualified Lead"})
    lead_id, _ = _meta_lead(graph, page[0])
    _move(owner, lead_id, "contacted")

    _drain(queues)

    assert [e["event_name"] for e in _sent(graph)] == ["New", "Marketing Qualified Lead"]


def test_hashed_email_and_phone_go_only_when_the_organization_allows_it(queues, graph, owner, page):
    _settings(owner, page[1], sendHashedContact=True)
    _meta_lead(graph, page[0])
    _drain(queues)

    (event,) = _sent(graph)
    assert event["user_data"]["em"] == [hashlib.sha256(b"ada@example.com").hexdigest()]
    assert event["user_data"]["ph"] == [hashlib.sha256(b"447700900123").hexdigest()]


def test_a_redelivered_status_change_adds_nothing(queues, graph, owner, page):
    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues)
    _move(owner, lead_id, "contacted")
    (message,) = [m for m in queues["task_lifecycle"].receive_all() if '"lead.status_changed"' in m["Body"]]
    record = sqs_record_from_message(message, queue_name=queues["task_lifecycle"].name)

    for _ in range(3):
        _handler("task_lifecycle")(sqs_event(record), lambda_context("leadcrm-task-lifecycle"))
    _drain(queues)

    assert [e["event_name"] for e in _sent(graph)] == ["New", "Contacted"]
    assert len(_rows(lead_id)) == 2


def test_a_course_purchase_that_moves_the_lead_to_customer_is_sent_as_its_stage(queues, graph, owner, page):
    from tests.support.conversion_helpers import deliver_platform_event, make_person

    _settings(owner, page[1])
    email = f"buyer-{fresh_id()}@example.com"
    lead_id, _ = _meta_lead(graph, page[0], email=email)
    _drain(queues)
    buyer = make_person(None, first_name="Ada", last_name="Lovelace", email=email)
    detail = {"organizationId": str(owner.org_id), "userId": str(buyer.user_id), "entitlementId": str(uuid.uuid4()),
              "courseId": "course-yoga", "courseName": "Yoga 101", "transition": "created_active"}  # fmt: skip

    delivered = deliver_platform_event(
        lambda event: _handler("task_lifecycle")(event, lambda_context("leadcrm-task-lifecycle")),
        "entitlement.activated",
        detail,
    )
    _drain(queues)

    assert delivered == {"batchItemFailures": []}
    assert [e["event_name"] for e in _sent(graph)] == ["New", "Customer"]


# --- what is not sent --------------------------------------------------------------------------------------------


def test_nothing_is_sent_while_the_organization_has_not_turned_crm_events_on(queues, graph, owner, page):
    _settings(owner, page[1], enabled=False)
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues)
    assert _sent(graph) == []
    assert _rows(lead_id) == []


def test_a_lead_that_did_not_come_from_lead_ads_sends_nothing(queues, graph, owner, page):
    _settings(owner, page[1])
    created = call_api("POST", leads_path(owner.org_id), sub=owner.sub, body={"name": "Walk In"})
    _move(owner, created.data["id"], "contacted")
    _drain(queues)
    assert _sent(graph) == []


def test_a_lead_who_revoked_every_channel_sends_nothing(queues, graph, owner, page):
    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues)
    for channel in ("email", "sms", "whatsapp", "call"):
        revoked = call_api("PUT", leads_path(owner.org_id, lead_id) + f"/consent/{channel}", sub=owner.sub,
                           body={"status": "revoked"})  # fmt: skip
        assert revoked.status == 200, revoked.body
    _move(owner, lead_id, "contacted")
    _drain(queues)

    assert [e["event_name"] for e in _sent(graph)] == ["New"]


def test_a_lead_erased_before_its_event_was_handed_to_the_sender_sends_nothing(queues, graph, owner, page):
    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues, only=("task_lifecycle",), rounds=1)  # recorded, not yet handed over
    assert [r["status"] for r in _rows(lead_id)] == ["pending"]

    assert call_api("DELETE", leads_path(owner.org_id, lead_id), sub=owner.sub).status in (200, 204)
    _drain(queues)

    assert _sent(graph) == []
    assert _rows(lead_id) == []


def test_a_lead_pseudonymized_before_its_event_was_handed_to_the_sender_sends_nothing(queues, graph, owner, page):
    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues, only=("task_lifecycle",), rounds=1)

    response = call_api("POST", leads_path(owner.org_id, lead_id) + "/pseudonymize", sub=owner.sub)
    assert response.status == 200, response.body
    _drain(queues)

    assert _sent(graph) == []
    assert _rows(lead_id) == []


def test_a_pseudonymized_lead_moved_later_sends_nothing(queues, graph, owner, page):
    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues)
    call_api("POST", leads_path(owner.org_id, lead_id) + "/pseudonymize", sub=owner.sub)
    _drain(queues)
    assert [e["event_name"] for e in _sent(graph)] == ["New"]


def test_a_page_disconnected_before_the_hand_off_withdraws_the_event(queues, graph, owner, page):
    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues, only=("task_lifecycle",), rounds=1)
    call_api("DELETE", f"/organizations/{owner.org_id}/integrations/meta/{page[1]}", sub=owner.sub)
    _drain(queues)

    assert _sent(graph) == []
    assert [(r["status"], r["withdrawn_reason"]) for r in _rows(lead_id)] == [("withdrawn", "disconnected")]


# --- Meta's answers ----------------------------------------------------------------------------------------------


def test_an_event_meta_refuses_is_failed_with_metas_error_on_the_timeline(queues, graph, owner, page):
    _settings(owner, page[1], datasetId="999")
    graph_refuses = graph.receive_events

    def refuse(dataset_id, authorization, body):
        return 400, {"error": {"message": "(#100) Invalid dataset", "type": "OAuthException", "code": 100}}

    graph.receive_events = refuse  # type: ignore[method-assign]
    try:
        lead_id, _ = _meta_lead(graph, page[0])
        _drain(queues)
    finally:
        graph.receive_events = graph_refuses  # type: ignore[method-assign]

    assert [r["status"] for r in _rows(lead_id)] == ["failed"]
    (entry,) = activities_of(lead_id, "meta_crm_event_sent")
    assert entry["payload"]["sent"] is False
    assert entry["payload"]["answer"]["error"]["code"] == 100


def test_meta_failing_for_now_fails_the_record_for_a_retry(queues, graph, owner, page):
    from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

    _settings(owner, page[1])
    lead_id, _ = _meta_lead(graph, page[0])
    _drain(queues, only=("task_lifecycle",))
    graph.faults.arm("graph", "error5xx")
    try:
        with pytest.raises(BatchProcessingError):  # the whole batch failed: Lambda hands it back to SQS
            _drain(queues, only=("meta_events",), rounds=1)
    finally:
        graph.faults.clear()

    assert _sent(graph) == []
    assert [r["status"] for r in _rows(lead_id)] == ["queued"]
    assert activities_of(lead_id, "meta_crm_event_sent") == []


# --- settings ----------------------------------------------------------------------------------------------------


def test_before_the_first_put_the_settings_say_not_configured(owner, page):
    response = call_api("GET", f"/organizations/{owner.org_id}/integrations/meta/{page[1]}/crm-events", sub=owner.sub)
    assert response.status == 200
    assert (response.data["configured"], response.data["enabled"], response.data["pageId"]) == (False, False, page[0])


def test_the_same_settings_again_write_nothing(owner, page):
    first = _settings(owner, page[1]).data
    again = _settings(owner, page[1]).data
    assert again == first
    changed = _settings(owner, page[1], enabled=False).data
    assert changed["enabled"] is False
    assert changed["updatedAt"] > first["updatedAt"]


def test_another_organizations_connection_is_not_found(owner, page):
    stranger = make_caller(role="owner")
    response = _settings(stranger, page[1])
    assert (response.status, response.error_code) == (404, "CONNECTION_NOT_FOUND")


def test_a_disconnected_page_cannot_be_configured(owner, page):
    call_api("DELETE", f"/organizations/{owner.org_id}/integrations/meta/{page[1]}", sub=owner.sub)
    response = _settings(owner, page[1])
    assert (response.status, response.error_code) == (409, "CONNECTION_NOT_ACTIVE")


def test_a_mapped_stage_of_another_organization_is_not_found(owner, page):
    from tests.support.lead_moves_helpers import default_pipeline

    stranger = make_caller(role="owner")
    foreign_stage = str(default_pipeline(stranger.org_id).stage("new"))
    response = _settings(owner, page[1], stageEventNames={foreign_stage: "Lead"})
    assert (response.status, response.error_code) == (404, "STAGE_NOT_FOUND")


@pytest.mark.parametrize("dataset_id", ["", "abc", "1" * 65])
def test_a_dataset_id_that_is_not_a_meta_id_is_refused(owner, page, dataset_id):
    response = _settings(owner, page[1], datasetId=dataset_id)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_coach_may_not_configure_crm_events(owner, page):
    coach = make_caller(role="coach", organization=owner.organization)
    response = _settings(coach, page[1])
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")


# --- the sender's own refusals -----------------------------------------------------------------------------------


def _send(*bodies: str) -> dict[str, Any]:
    from meta_events.handler import lambda_handler

    records = [sqs_record(body, queue_name="leadcrm-meta-events") for body in bodies]
    return lambda_handler(sqs_event(*records), lambda_context("leadcrm-meta-events"))


def test_a_message_that_is_no_crm_event_is_rejected_not_retried(queues, graph):
    assert _send("not json", '{"kind": "meta.crm_event"}') == {"batchItemFailures": []}
    assert graph.recorded_events() == []


def test_an_event_for_a_page_without_a_token_is_reported_failed_not_retried(queues, graph, owner):
    import json

    body = {"crmEventId": str(uuid.uuid4()), "organizationId": str(owner.org_id), "leadId": str(uuid.uuid4()),
            "pageId": fresh_id(), "datasetId": "1234567890123456", "event": {"event_name": "New"}}  # fmt: skip

    assert _send(json.dumps(body)) == {"batchItemFailures": []}

    assert graph.recorded_events() == []
    (answer,) = [json.loads(m["Body"]) for m in queues["ingestion"].receive_all()]
    assert (answer["kind"], answer["delivered"], answer["answer"]["error"]["code"]) == (
        "meta.crm_event_result",
        False,
        "no_secret",
    )
