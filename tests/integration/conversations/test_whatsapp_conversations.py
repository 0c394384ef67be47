"""WhatsApp conversations (issue 24) through the ingestion, graph_fetch and API functions: a known lead's
messages land in its WhatsApp thread (idempotent on wamid, unread, re-open, `conversation.inbound_received`),
status webhooks move what was sent in order whatever order they arrive in, and staff send free-form text
inside the 24-hour window and an approved template outside it, through the organization's connected number."""

from __future__ import annotations

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from leadcrm.ingestion.rules.meta import WHATSAPP_CHANNEL
from tests.support.api import call_api
from tests.support.conversations_helpers import (
    conversations_path,
    messages_of,
    outbox_of,
    put_consent,
    set_thread_columns,
    thread_row,
    threads_of_org,
)
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import connect_number, ctwa_referral, deliver, fresh_id
from tests.support.lead_moves_helpers import create_lead, lead_row
from tests.support.whatsapp_helpers import (
    APPROVED_TEMPLATE,
    age_messages,
    deliver_status,
    inbound,
    message_row,
    run_graph_fetch,
    send_whatsapp,
    wamid,
    whatsapp_stand_in,
)

NO_FAILURES = {"batchItemFailures": []}
WA_ID = "447700900456"


@pytest.fixture(autouse=True)
def _queues(event_bus, ingestion_queue, graph_fetch_queue) -> None:
    """The bus (outbox events), the ingestion queue and the graph-fetch queue the API sends to."""


@pytest.fixture
def cloud_api(monkeypatch):
    with whatsapp_stand_in(monkeypatch) as stand_in:
        yield stand_in


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def number(owner) -> str:
    phone_number_id = fresh_id()
    connect_number(owner, phone_number_id, token="number-token-of-the-studio")
    return phone_number_id


@pytest.fixture
def lead(owner) -> dict:
    return create_lead(owner, name="Grace Hopper", phone=f"+{WA_ID}")


def _thread_of(owner, lead) -> dict:
    (thread,) = [t for t in threads_of_org(owner.org_id) if t["channel"] == "whatsapp"]
    assert str(thread["lead_id"]) == lead["id"]
    return thread


def _wrote(owner, lead, number, text: str = "Hi, is there a class tonight?") -> dict:
    assert deliver(inbound(number, WA_ID, text)) == NO_FAILURES
    return _thread_of(owner, lead)


# -- inbound ----------------------------------------------------------------------------------------------------


def test_a_known_leads_message_lands_in_its_whatsapp_thread(owner, lead, number):
    thread = _wrote(owner, lead, number, "Do you have a class at 18:00?")

    (message,) = messages_of(thread["id"])
    assert (message["direction"], message["status"], message["body"]) == (
        "inbound",
        "received",
        "Do you have a class at 18:00?",
    )
    assert (message["from_address"], message["to_address"]) == (WA_ID, number)
    assert thread["unread_count"] == 1


def test_the_message_is_recorded_once_per_wamid(owner, lead, number):
    message = inbound(number, WA_ID, wamid=wamid())
    assert deliver(message) == NO_FAILURES
    assert deliver(message) == NO_FAILURES

    thread = _thread_of(owner, lead)
    assert len(messages_of(thread["id"])) == 1
    assert thread_row(thread["id"])["unread_count"] == 1
    assert len(outbox_of(thread["id"], "conversation.inbound_received")) == 1


def test_an_inbound_message_appends_conversation_inbound_received_with_ids_only(owner, lead, number):
    thread = _wrote(owner, lead, number)

    (event,) = outbox_of(thread["id"], "conversation.inbound_received")
    (message,) = messages_of(thread["id"])
    assert event["payload"] == {
        "organizationId": str(owner.org_id),
        "conversationId": str(thread["id"]),
        "leadId": lead["id"],
        "messageId": str(message["id"]),
        "channel": "whatsapp",
    }


def test_a_message_reopens_a_closed_thread_and_stamps_the_leads_last_inbound(owner, lead, number):
    thread = _wrote(owner, lead, number)
    set_thread_columns(thread["id"], status="closed", unread_count=0)

    assert deliver(inbound(number, WA_ID, "Still there?")) == NO_FAILURES

    after = thread_row(thread["id"])
    assert (after["status"], after["unread_count"]) == ("open", 1)
    assert lead_row(lead["id"])["last_inbound_at"] is not None


def test_an_organic_message_from_an_unknown_number_creates_no_lead_and_no_thread(owner, number):
    assert deliver(inbound(number, "15550001111")) == NO_FAILURES

    assert threads_of_org(owner.org_id) == []
    leads = call_api("GET", f"/organizations/{owner.org_id}/leads", sub=owner.sub)
    assert leads.data == []


def test_a_message_to_a_number_no_organization_connected_records_nothing(owner, lead):
    assert deliver(inbound(fresh_id(), WA_ID)) == NO_FAILURES

    assert threads_of_org(owner.org_id) == []


def test_a_click_to_whatsapp_referral_makes_its_lead_and_its_message_lands_in_the_leads_thread(owner, number):
    referral = ctwa_referral(ctwa_clid=f"clid-{fresh_id()}")
    assert deliver(inbound(number, "447700900999", "I saw your ad", referral=referral, name="Ada")) == NO_FAILURES

    (thread,) = threads_of_org(owner.org_id)
    assert thread["channel"] == WHATSAPP_CHANNEL
    assert [m["body"] for m in messages_of(thread["id"])] == ["I saw your ad"]


# -- sending -----------------------------------------------------------------------------------------------------


def test_staff_answer_within_the_window_through_the_connected_number(owner, lead, number, cloud_api):
    thread = _wrote(owner, lead, number)

    answer = send_whatsapp(owner, thread["id"], {"text": "Yes, 18:00 with Dana."})

    assert answer.status == 201, answer.body
    assert answer.data["message"]["status"] == "queued"
    assert run_graph_fetch() == NO_FAILURES
    (sent,) = cloud_api.sent()
    assert (sent["phoneNumberId"], sent["to"], sent["type"], sent["text"]) == (
        number,
        WA_ID,
        "text",
        "Yes, 18:00 with Dana.",
    )
    message = message_row(answer.data["message"]["id"])
    assert (message["status"], message["provider_message_id"]) == ("sent", sent["wamid"])


def test_a_sent_message_stamps_the_lead_and_moves_a_new_lead_to_contacted(owner, lead, number, cloud_api):
    thread = _wrote(owner, lead, number)
    send_whatsapp(owner, thread["id"], {"text": "Welcome!"})
    assert run_graph_fetch() == NO_FAILURES

    row = lead_row(lead["id"])
    assert row["last_outbound_at"] is not None
    assert row["first_human_response_at"] is not None
    assert row["status"] == "contacted"


def test_free_form_after_the_window_is_409_naming_when_it_closed(owner, lead, number, cloud_api):
    thread = _wrote(owner, lead, number)
    age_messages(thread["id"], hours=25)
    (inbound_message,) = messages_of(thread["id"])

    refused = send_whatsapp(owner, thread["id"], {"text": "Are you coming?"})

    assert refused.status == 409
    assert refused.body["error"]["code"] == "WHATSAPP_WINDOW_CLOSED"
    from datetime import datetime, timedelta

    closed_at = datetime.fromisoformat(refused.body["error"]["closedAt"])
    assert closed_at == inbound_message["created_at"] + timedelta(hours=24)
    assert len(messages_of(thread["id"])) == 1  # nothing written


def test_free_form_to_a_lead_who_never_wrote_is_409_without_a_closing_time(owner, lead, number):
    opened = call_api(
        "POST", conversations_path(owner.org_id), sub=owner.sub, body={"leadId": lead["id"], "channel": "whatsapp"}
    )
    refused = send_whatsapp(owner, opened.data["conversation"]["id"], {"text": "Hello"})

    assert refused.status == 409
    assert (refused.body["error"]["code"], refused.body["error"]["closedAt"]) == ("WHATSAPP_WINDOW_CLOSED", None)


def _synced(owner, cloud_api, *templates: dict) -> None:
    cloud_api.register_templates("102290129340398", list(templates))
    answer = call_api(
        "POST",
        f"/organizations/{owner.org_id}/whatsapp-templates/sync",
        sub=owner.sub,
        body={"businessAccountId": "102290129340398"},
    )
    assert answer.status == 202, answer.body
    assert run_graph_fetch() == NO_FAILURES


def test_synced_templates_are_listed_with_their_parameter_count(owner, number, cloud_api):
    _synced(owner, cloud_api, APPROVED_TEMPLATE, {**APPROVED_TEMPLATE, "name": "draft", "status": "PENDING"})

    listed = call_api("GET", f"/organizations/{owner.org_id}/whatsapp-templates", sub=owner.sub)

    assert [(t["name"], t["status"], t["parameterCount"]) for t in listed.data] == [
        ("draft", "PENDING", 2),
        ("trial_reminder", "APPROVED", 2),
    ]


def test_a_template_goes_out_after_the_window(owner, lead, number, cloud_api):
    _synced(owner, cloud_api, APPROVED_TEMPLATE)
    thread = _wrote(owner, lead, number)
    age_messages(thread["id"], hours=30)

    answer = send_whatsapp(
        owner,
        thread["id"],
        {"template": {"name": "trial_reminder", "language": "en_US", "parameters": ["Grace", "Thursday"]}},
    )

    assert answer.status == 201, answer.body
    assert answer.data["message"]["body"] == "Hi Grace, your trial class is on Thursday."
    assert answer.data["message"]["templateName"] == "trial_reminder"
    assert run_graph_fetch() == NO_FAILURES
    (sent,) = cloud_api.sent()
    assert sent["template"] == {
        "name": "trial_reminder",
        "language": {"code": "en_US"},
        "components": [
            {"type": "body", "parameters": [{"type": "text", "text": "Grace"}, {"type": "text", "text": "Thursday"}]}
        ],
    }


@pytest.mark.parametrize(
    ("template", "status", "code"),
    [
        ({"name": "nope", "language": "en_US", "parameters": []}, 404, "TEMPLATE_NOT_FOUND"),
        ({"name": "draft", "language": "en_US", "parameters": ["a", "b"]}, 409, "TEMPLATE_NOT_APPROVED"),
        ({"name": "trial_reminder", "language": "en_US", "parameters": ["a"]}, 400, "TEMPLATE_PARAMETERS_MISMATCH"),
    ],
)
def test_only_an_approved_synced_template_with_its_parameters_is_sent(
    owner, lead, number, cloud_api, template, status, code
):
    _synced(owner, cloud_api, APPROVED_TEMPLATE, {**APPROVED_TEMPLATE, "name": "draft", "status": "PENDING"})
    thread = _wrote(owner, lead, number)

    refused = send_whatsapp(owner, thread["id"], {"template": template})

    assert (refused.status, refused.body["error"]["code"]) == (status, code)


def test_a_lead_that_revoked_whatsapp_is_refused_403(owner, lead, number):
    thread = _wrote(owner, lead, number)
    put_consent(owner, lead["id"], "whatsapp", {"status": "revoked"})

    refused = send_whatsapp(owner, thread["id"], {"text": "Hello"})

    assert (refused.status, refused.body["error"]["code"]) == (403, "LEAD_CHANNEL_BLOCKED")


def test_without_a_connected_number_a_send_is_409(owner, lead, number):
    thread = _wrote(owner, lead, number)
    (connection,) = call_api("GET", f"/organizations/{owner.org_id}/integrations/whatsapp", sub=owner.sub).data
    call_api("DELETE", f"/organizations/{owner.org_id}/integrations/whatsapp/{connection['id']}", sub=owner.sub)

    refused = send_whatsapp(owner, thread["id"], {"text": "Hello"})

    assert (refused.status, refused.body["error"]["code"]) == (409, "WHATSAPP_NOT_CONNECTED")


def test_an_email_thread_does_not_send_whatsapp(owner, lead):
    opened = call_api(
        "POST", conversations_path(owner.org_id), sub=owner.sub, body={"leadId": lead["id"], "channel": "email"}
    )
    refused = send_whatsapp(owner, opened.data["conversation"]["id"], {"text": "Hello"})

    assert (refused.status, refused.body["error"]["code"]) == (400, "CHANNEL_NOT_SUPPORTED")


def test_a_retried_send_with_its_idempotency_key_answers_the_first_outcome_and_sends_once(
    owner, lead, number, cloud_api
):
    thread = _wrote(owner, lead, number)

    first = send_whatsapp(owner, thread["id"], {"text": "Once"}, key="send-once-1")
    again = send_whatsapp(owner, thread["id"], {"text": "Once"}, key="send-once-1")

    assert again.status == 201
    assert again.data["message"]["id"] == first.data["message"]["id"]
    assert run_graph_fetch() == NO_FAILURES
    assert len(cloud_api.sent()) == 1


def test_a_message_graph_refuses_is_failed_with_graphs_error(owner, lead, number, cloud_api, monkeypatch):
    thread = _wrote(owner, lead, number)
    monkeypatch.setattr(
        cloud_api, "send", lambda *args: (400, {"error": {"code": 131026, "message": "Message undeliverable"}})
    )

    answer = send_whatsapp(owner, thread["id"], {"text": "Hello"})
    assert run_graph_fetch() == NO_FAILURES

    message = message_row(answer.data["message"]["id"])
    assert (message["status"], message["error"]) == ("failed", "131026: Message undeliverable")


# -- statuses ------------------------------------------------------------------------------------------------------


def _sent_message(owner, lead, number) -> dict:
    thread = _wrote(owner, lead, number)
    answer = send_whatsapp(owner, thread["id"], {"text": "Hello"})
    assert run_graph_fetch() == NO_FAILURES
    return message_row(answer.data["message"]["id"])


@pytest.mark.parametrize(
    "order", [("sent", "delivered", "read"), ("read", "delivered", "sent"), ("delivered", "read", "sent")]
)
def test_statuses_move_the_message_in_order_whatever_order_they_arrive_in(owner, lead, number, cloud_api, order):
    message = _sent_message(owner, lead, number)

    for status in order:
        assert deliver_status(number, message["provider_message_id"], status) == NO_FAILURES

    assert message_row(message["id"])["delivery_status"] == "read"


def test_a_replayed_status_changes_nothing(owner, lead, number, cloud_api):
    message = _sent_message(owner, lead, number)
    deliver_status(number, message["provider_message_id"], "delivered", timestamp=1767225700)
    before = message_row(message["id"])

    deliver_status(number, message["provider_message_id"], "delivered", timestamp=1767229999)

    assert message_row(message["id"])["delivery_status_at"] == before["delivery_status_at"]


def test_a_failed_status_is_recorded_with_its_error(owner, lead, number, cloud_api):
    message = _sent_message(owner, lead, number)
    errors = [{"code": 131049, "title": "Message not delivered to maintain healthy ecosystem engagement."}]

    deliver_status(number, message["provider_message_id"], "failed", errors=errors)

    after = message_row(message["id"])
    assert after["delivery_status"] == "failed"
    assert after["error"] == "131049: Message not delivered to maintain healthy ecosystem engagement."
    assert after["delivery_detail"] == {"errors": errors}


def test_a_status_that_arrives_before_the_send_is_recorded_is_folded_in_then(
    owner, lead, number, cloud_api, monkeypatch
):
    thread = _wrote(owner, lead, number)
    early = "wamid.arrived-first"
    original = cloud_api.send

    def send_and_report_early(*args):
        status, body = original(*args)
        body["messages"][0]["id"] = early
        return status, body

    monkeypatch.setattr(cloud_api, "send", send_and_report_early)
    answer = send_whatsapp(owner, thread["id"], {"text": "Hello"})
    assert deliver_status(number, early, "delivered") == NO_FAILURES  # before graph_fetch's answer is recorded

    assert run_graph_fetch() == NO_FAILURES

    assert message_row(answer.data["message"]["id"])["delivery_status"] == "delivered"


def test_graph_down_retries_the_send_and_the_message_stays_queued(owner, lead, number, cloud_api, monkeypatch):
    from graph_fetch.handler import lambda_handler
    from tests.support.events import lambda_context, sqs_event, sqs_record_from_message

    thread = _wrote(owner, lead, number)
    monkeypatch.setattr(
        cloud_api, "send", lambda *args: (500, {"error": {"code": 2, "message": "Service unavailable"}})
    )
    answer = send_whatsapp(owner, thread["id"], {"text": "Hello"})
    records = [sqs_record_from_message(m, queue_name="leadcrm-graph-fetch") for m in _graph_fetch_queue_messages()]

    # the batch's only record failed for now: the invocation fails and SQS hands it back (then the DLQ)
    with pytest.raises(BatchProcessingError):
        lambda_handler(sqs_event(*records), lambda_context("leadcrm-graph-fetch"))

    assert message_row(answer.data["message"]["id"])["status"] == "queued"


def test_a_send_for_a_number_disconnected_since_fails_the_message(owner, lead, number, cloud_api):
    thread = _wrote(owner, lead, number)
    answer = send_whatsapp(owner, thread["id"], {"text": "Hello"})
    (connection,) = call_api("GET", f"/organizations/{owner.org_id}/integrations/whatsapp", sub=owner.sub).data
    call_api("DELETE", f"/organizations/{owner.org_id}/integrations/whatsapp/{connection['id']}", sub=owner.sub)

    assert run_graph_fetch() == NO_FAILURES

    message = message_row(answer.data["message"]["id"])
    assert message["status"] == "failed"
    assert message["error"].startswith("no_connection")
    assert cloud_api.sent() == []


def _graph_fetch_queue_messages() -> list[dict]:
    import os

    from tests.support.aws import aws_client

    sqs, url = aws_client("sqs"), os.environ["GRAPH_FETCH_QUEUE_URL"]
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get("Messages", [])


# -- a batch of webhooks -------------------------------------------------------------------------------------------


def _referrals(number: str, count: int) -> list[dict]:
    return [
        inbound(
            number, f"4477009010{i:02d}", f"Saw your ad {i}", referral=ctwa_referral(ctwa_clid=f"clid-{fresh_id()}")
        )
        for i in range(count)
    ]


def test_a_batch_of_referrals_lands_each_message_in_its_new_leads_thread_in_one_unit_of_work(
    owner, number, monkeypatch
):
    import ingestion.processors as processors
    from leadcrm.ingestion.whatsapp import record_webhooks

    together: list[int] = []

    def counting(uow, connections, payloads, known_leads):
        together.append(len(payloads))
        return record_webhooks(uow, connections, payloads, known_leads)

    monkeypatch.setattr(processors, "record_webhooks", counting)

    assert deliver(*_referrals(number, 5)) == NO_FAILURES

    assert together == [5]
    threads = threads_of_org(owner.org_id)
    assert sorted(m["body"] for t in threads for m in messages_of(t["id"])) == [f"Saw your ad {i}" for i in range(5)]


def test_should_the_batch_fail_to_record_together_each_webhook_records_its_own(owner, number, monkeypatch):
    import ingestion.processors as processors

    def refuse(uow, connections, payloads, known_leads):
        raise RuntimeError("the batch's unit of work failed")

    monkeypatch.setattr(processors, "record_webhooks", refuse)

    assert deliver(*_referrals(number, 3)) == NO_FAILURES

    threads = threads_of_org(owner.org_id)
    assert sorted(m["body"] for t in threads for m in messages_of(t["id"])) == [f"Saw your ad {i}" for i in range(3)]


def test_two_messages_of_one_lead_in_one_batch_make_one_thread_with_two_unread(owner, lead, number):
    assert deliver(inbound(number, WA_ID, "Hi"), inbound(number, WA_ID, "Are you there?")) == NO_FAILURES

    thread = _thread_of(owner, lead)
    assert [m["body"] for m in messages_of(thread["id"])] == ["Hi", "Are you there?"]
    assert thread["unread_count"] == 2
    assert len(outbox_of(thread["id"], "conversation.inbound_received")) == 2


def test_a_batch_that_repeats_a_recorded_message_records_only_the_new_one(owner, lead, number):
    first = inbound(number, WA_ID, "Hi", wamid=wamid())
    assert deliver(first) == NO_FAILURES

    assert deliver(first, inbound(number, WA_ID, "Still there?")) == NO_FAILURES

    thread = _thread_of(owner, lead)
    assert [m["body"] for m in messages_of(thread["id"])] == ["Hi", "Still there?"]
    assert thread["unread_count"] == 2


def test_a_thread_another_batch_makes_while_this_one_waits_is_found_and_gets_both_messages(
    owner, lead, number, monkeypatch
):
    """The second batch's statement begins before the first commits the lead's new thread: it waits on the
    thread's key, skips making it, and finds it with a statement of its own."""
    import time
    import uuid

    from sqlalchemy import text

    from leadcrm.conversations.whatsapp_inbound import Addressed, InboundMessage, record_inbound_many
    from leadcrm.platform.db.engine import get_engine
    from leadcrm.platform.db.uow import UnitOfWork
    from tests.support.concurrency import run_together
    from tests.support.ingestion_helpers import wide_pool

    def message(body: str) -> list[Addressed]:
        inbound_message = InboundMessage(phone_number_id=number, wamid=wamid(), wa_id=WA_ID, text=body)
        return [Addressed(uuid.UUID(str(owner.org_id)), inbound_message, uuid.UUID(lead["id"]))]

    def second() -> list[str]:
        with UnitOfWork() as uow:
            outcomes = record_inbound_many(uow, message("Are you there?"))
            uow.commit()
        return outcomes

    def first_commits_once_the_second_waits() -> None:
        with get_engine().connect() as watcher:
            for _ in range(100):
                waiting = watcher.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type IN ('Lock', 'LWLock')")
                ).scalar_one()
                watcher.rollback()
                if waiting:
                    break
                time.sleep(0.05)
            assert waiting, "the second batch never waited on the first's thread"
        first.commit()

    with wide_pool(monkeypatch):
        first = UnitOfWork().__enter__()
        try:
            assert record_inbound_many(first, message("Hi")) == ["recorded"]
            results, errors = run_together([second, first_commits_once_the_second_waits])
        finally:
            first.__exit__(None, None, None)

    assert errors == [None, None]
    assert results[0] == ["recorded"]
    thread = _thread_of(owner, lead)
    assert sorted(m["body"] for m in messages_of(thread["id"])) == ["Are you there?", "Hi"]
    assert thread["unread_count"] == 2
