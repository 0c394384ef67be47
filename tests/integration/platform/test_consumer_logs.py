"""A consumer's logs connect per message: every line written while an SQS record is handled carries that
record's message id as its correlation id, whichever logger wrote it and however the record ended."""

from __future__ import annotations

from typing import Any

from tests.support.events import eventbridge_envelope, lambda_context, sqs_event, sqs_record
from tests.support.logs import captured_logs

LIFECYCLE_QUEUE = "leadcrm-task-lifecycle"


def _lines_by_correlation(lines: list[dict[str, Any]]) -> dict[str | None, list[str]]:
    by_id: dict[str | None, list[str]] = {}
    for line in lines:
        by_id.setdefault(line.get("correlation_id"), []).append(line["message"])
    return by_id


def test_each_record_of_a_batch_logs_under_its_own_message_id():
    """An event no one reacts to logs from the core (`leadcrm.wiring`) and from the handler; a body that is
    no event is rejected by the platform (`leadcrm.platform.failures`). Three records, three ids."""
    from task_lifecycle.handler import lambda_handler

    ignored = [
        sqs_record(eventbridge_envelope("nobody.listens", {"eventId": "e1"}), queue_name=LIFECYCLE_QUEUE)
        for _ in range(2)
    ]
    malformed = sqs_record("not json at all", queue_name=LIFECYCLE_QUEUE)
    with captured_logs() as logs:
        result = lambda_handler(sqs_event(*ignored, malformed), lambda_context("leadcrm-task-lifecycle"))
    assert result == {"batchItemFailures": []}
    by_id = _lines_by_correlation(logs.lines)
    for record in ignored:
        assert by_id[record["messageId"]] == ["ignoring event type", "event handled"]
    assert by_id[malformed["messageId"]] == ["message rejected"]
    assert set(by_id) == {r["messageId"] for r in (*ignored, malformed)}


def test_every_line_of_an_invocation_names_its_function():
    from task_lifecycle.handler import lambda_handler

    record = sqs_record(eventbridge_envelope("nobody.listens", {"eventId": "e2"}), queue_name=LIFECYCLE_QUEUE)
    with captured_logs() as logs:
        lambda_handler(sqs_event(record), lambda_context("leadcrm-task-lifecycle"))
    assert logs.lines
    assert {line["function_name"] for line in logs.lines} == {"leadcrm-task-lifecycle"}
