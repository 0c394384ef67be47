"""Consumers tell permanent failures from transient ones (leadcrm.platform.failures), in every consumer alike.

A message that can never succeed (not JSON, a payload of the wrong type, a field that does not parse, a row a
constraint refuses, one of our refusals) is rejected: a structured log line with its message id and reason, a
`RejectedMessages` metric with the function and the reason as dimensions, and acknowledged (absent from
batchItemFailures). A message that failed for now (the database unreachable, a deadlock, a statement
timeout, AWS throttling, a timeout, Graph failing) is handed back in batchItemFailures, so SQS retries it into
the DLQ, from which a redrive can still succeed. Driven with the SQS events Lambda hands each function.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.exceptions import ClientError, ReadTimeoutError
from sqlalchemy import text

from leadcrm.platform.errors import NotFound
from tests.support.events import eventbridge_envelope, lambda_context, sqs_event, sqs_record
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    connect_page,
    fresh_id,
    graph_lead,
    graph_stand_in,
    leadgen_message,
    leadgen_payload,
    webhook_message,
)
from tests.support.rejections import rejected_metrics, rejections

TEST_EVENT = "test.consumer_failure"


@pytest.fixture(autouse=True)
def _aws(event_bus, ingestion_queue, graph_fetch_queue):
    """What the consumers publish and queue to exists."""


def _task_lifecycle(*records: dict[str, Any]) -> dict[str, Any]:
    from task_lifecycle.handler import lambda_handler

    return lambda_handler(sqs_event(*records), lambda_context("leadcrm-task-lifecycle"))


def _ingestion(*records: dict[str, Any]) -> dict[str, Any]:
    from ingestion.handler import lambda_handler

    return lambda_handler(sqs_event(*records), lambda_context("leadcrm-ingestion"))


def _graph_fetch(*records: dict[str, Any]) -> dict[str, Any]:
    from graph_fetch.handler import lambda_handler

    return lambda_handler(sqs_event(*records), lambda_context("leadcrm-graph-fetch"))


CONSUMERS = {"task_lifecycle": _task_lifecycle, "ingestion": _ingestion, "graph_fetch": _graph_fetch}


@pytest.fixture
def react(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[..., Any]], dict[str, Any]]:
    """A task_lifecycle reaction for TEST_EVENT doing `work(conn, detail)`; the record of one such event."""
    from leadcrm import wiring

    def install(work: Callable[..., Any]) -> dict[str, Any]:
        monkeypatch.setitem(wiring.EVENT_REACTIONS, TEST_EVENT, work)
        detail = {"eventId": str(uuid.uuid4()), "type": TEST_EVENT, "payload": {"leadId": "not-a-uuid"}}
        return sqs_record(eventbridge_envelope(TEST_EVENT, detail), queue_name="leadcrm-task-lifecycle")

    return install


@pytest.fixture
def database_unreachable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The product's engine points at a port nothing listens on: every unit of work fails to connect."""
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine

    monkeypatch.setenv("DATABASE_URL", "postgresql://leadcrm:nope@127.0.0.1:9/leadcrm")
    get_settings.cache_clear()
    dispose_engine()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()
    dispose_engine()


def _throttled(operation: str) -> ClientError:
    answer = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
    return ClientError({**answer, "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)  # type: ignore[arg-type]


# -- permanent: acknowledged, recorded, counted ----------------------------------------------------------------

NOT_JSON, FIVE = "this is not json {", "5"

PERMANENT: dict[str, tuple[str, Callable[[], Any], str]] = {
    # kind: (consumer, the message body, the reason)
    "task_lifecycle / not JSON": ("task_lifecycle", lambda: NOT_JSON, "malformed"),
    "task_lifecycle / a body that is 5": ("task_lifecycle", lambda: FIVE, "malformed"),
    "task_lifecycle / an event without its detail": (
        "task_lifecycle",
        lambda: {"version": "0", "id": "x", "detail-type": "lead.created"},
        "malformed",
    ),
    "task_lifecycle / a detail that is 5": (
        "task_lifecycle",
        lambda: eventbridge_envelope("lead.created", 5),  # type: ignore[arg-type]
        "malformed",
    ),
    "ingestion / not JSON": ("ingestion", lambda: NOT_JSON, "malformed"),
    "ingestion / a body that is 5": ("ingestion", lambda: FIVE, "malformed"),
    "ingestion / a message of no known shape": ("ingestion", lambda: {"surprise": True}, "malformed"),
    "ingestion / a signed WhatsApp webhook whose JSON is 5": (
        "ingestion",
        lambda: webhook_message("whatsapp", 5),  # type: ignore[arg-type]
        "malformed",
    ),
    "ingestion / a meta.lead whose payload is 5": (
        "ingestion",
        lambda: {"kind": "meta.lead", "payload": 5},
        "malformed",
    ),
    "ingestion / a meta.lead without its lead": (
        "ingestion",
        lambda: {"kind": "meta.lead", "payload": {"leadgenId": fresh_id()}},
        "malformed",
    ),
    "ingestion / a lead import whose job id is no id": (
        "ingestion",
        lambda: {"kind": "lead_import", "jobId": "not-a-uuid"},
        "malformed",
    ),
    "graph_fetch / not JSON": ("graph_fetch", lambda: NOT_JSON, "malformed"),
    "graph_fetch / a signed leadgen webhook whose JSON is 5": (
        "graph_fetch",
        lambda: webhook_message("meta.leadgen", 5),  # type: ignore[arg-type]
        "malformed",
    ),
}


@pytest.mark.parametrize("kind", PERMANENT)
def test_a_message_that_can_never_succeed_is_acknowledged_recorded_and_counted(kind, caplog, capsys):
    consumer, body, reason = PERMANENT[kind]
    caplog.set_level(logging.INFO)
    record = sqs_record(body())

    assert CONSUMERS[consumer](record) == {"batchItemFailures": []}

    assert rejections(caplog) == [(consumer, record["messageId"], reason)]
    assert rejected_metrics(capsys.readouterr().out) == [(consumer, reason)]


def _refuse() -> None:
    raise NotFound("Not found.", code="LEAD_NOT_FOUND")


REACTIONS_THAT_CAN_NEVER_SUCCEED: dict[str, tuple[Callable[[Any, dict[str, Any]], Any], str]] = {
    "a NOT NULL constraint": (
        lambda conn, detail: conn.execute(text("INSERT INTO organizations (id) VALUES (:i)"), {"i": uuid.uuid4()}),
        "constraint",
    ),
    "a value PostgreSQL cannot read": (
        lambda conn, detail: conn.execute(text("SELECT CAST('x' AS integer)")),
        "constraint",
    ),
    "a field that does not parse": (lambda conn, detail: uuid.UUID(detail["payload"]["leadId"]), "invalid_data"),
    "one of our refusals": (lambda conn, detail: _refuse(), "refused"),
}


@pytest.mark.parametrize("kind", REACTIONS_THAT_CAN_NEVER_SUCCEED)
def test_a_reaction_that_can_never_succeed_is_acknowledged_recorded_and_counted(kind, react, caplog, capsys):
    work, reason = REACTIONS_THAT_CAN_NEVER_SUCCEED[kind]
    caplog.set_level(logging.INFO)
    record, good = react(work), sqs_record(eventbridge_envelope("no.reaction", {"eventId": str(uuid.uuid4())}))

    assert _task_lifecycle(record, good) == {"batchItemFailures": []}

    assert rejections(caplog) == [("task_lifecycle", record["messageId"], reason)]
    assert rejected_metrics(capsys.readouterr().out) == [("task_lifecycle", reason)]


# -- transient: retried ---------------------------------------------------------------------------------------


def _raise_server_error(sqlstate: str) -> Callable[[Any, dict[str, Any]], Any]:
    return lambda conn, detail: conn.execute(
        text(f"DO $$ BEGIN RAISE EXCEPTION 'for now' USING ERRCODE = '{sqlstate}'; END $$")
    )


TRANSIENT_REACTIONS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "a serialization failure": _raise_server_error("40001"),
    "a deadlock": _raise_server_error("40P01"),
    "a lock not available": _raise_server_error("55P03"),
    "the server's statement timeout": lambda conn, detail: (
        conn.execute(text("SET LOCAL statement_timeout = 10")),
        conn.execute(text("SELECT pg_sleep(1)")),
    ),
    "the server shutting down": _raise_server_error("57P01"),
}


@pytest.mark.parametrize("kind", TRANSIENT_REACTIONS)
def test_a_reaction_that_failed_for_now_is_retried_and_the_rest_of_its_batch_is_done(kind, react, caplog):
    record = react(TRANSIENT_REACTIONS[kind])
    good = sqs_record(eventbridge_envelope("no.reaction", {"eventId": str(uuid.uuid4())}))

    assert _task_lifecycle(good, record) == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert rejections(caplog) == []


def test_every_message_that_needs_the_database_is_retried_while_it_is_unreachable(database_unreachable, caplog):
    lifecycle = sqs_record(eventbridge_envelope("lead.created", {"eventId": str(uuid.uuid4()), "payload": {}}))
    lead = sqs_record({"kind": "meta.lead", "payload": {"pageId": "1", "leadgenId": "2", "lead": {"id": "2"}}})
    other = sqs_record(webhook_message("whatsapp", {"object": "whatsapp_business_account", "entry": []}))

    with pytest.raises(BatchProcessingError):  # every record failed: Lambda hands the whole batch back
        _task_lifecycle(lifecycle)
    assert _ingestion(lead, other) == {"batchItemFailures": [{"itemIdentifier": lead["messageId"]}]}
    assert rejections(caplog) == []


@pytest.mark.parametrize(
    "error",
    [_throttled("SendMessage"), ReadTimeoutError(endpoint_url="https://sqs.eu-west-1.amazonaws.com/"), TimeoutError()],
    ids=["AWS throttling", "an AWS read timeout", "a socket timeout"],
)
def test_an_aws_call_that_failed_for_now_is_retried(error, monkeypatch, caplog):
    from ingestion import processors

    def failing(body: dict[str, Any]) -> str:
        raise error

    monkeypatch.setattr(processors, "forward_to_graph_fetch", failing)
    record = sqs_record(webhook_message("meta.leadgen", leadgen_payload(fresh_id(), fresh_id())))
    other = sqs_record(webhook_message("whatsapp", {"object": "whatsapp_business_account", "entry": []}))

    assert _ingestion(other, record) == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert rejections(caplog) == []


def test_graph_failing_is_retried_by_graph_fetch(monkeypatch, caplog):
    owner, page_id, leadgen_id = make_caller(role="owner"), fresh_id(), fresh_id()
    connect_page(owner, page_id)
    with graph_stand_in(monkeypatch) as graph:
        graph.register(graph_lead(leadgen_id))
        graph.fail(leadgen_id, 503)
        record = sqs_record(leadgen_message(page_id, leadgen_id), queue_name="leadcrm-graph-fetch")
        empty = sqs_record(webhook_message("meta.leadgen", {"object": "page", "entry": []}))
        assert _graph_fetch(empty, record) == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert rejections(caplog) == []
