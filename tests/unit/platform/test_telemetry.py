"""Tracing is on in Lambda only and costs nothing elsewhere; in Lambda each handler and each unit of work is a
subsegment and botocore is patched only once it is imported; an invocation's log keys belong to its thread."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from leadcrm.platform.telemetry import instrumented, logger, tracer, tracing_enabled
from tests.support.events import http_api_event, lambda_context, sqs_event, sqs_record
from tests.support.logs import captured_logs
from tests.support.xray import IN_LAMBDA, TRACE_ROOT, XRayDaemon, last_json_line, named, run_python, without_lambda

HANDLERS = (
    "api",
    "webhooks",
    "ingestion",
    "graph_fetch",
    "meta_events",
    "webhook_delivery",
    "task_lifecycle",
    "migrations",
    "admin",
)


@pytest.mark.parametrize(
    ("environ", "enabled"),
    [
        ({}, False),  # tests, the local stack
        (IN_LAMBDA, True),
        ({**IN_LAMBDA, "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({**IN_LAMBDA, "POWERTOOLS_TRACE_DISABLED": "0"}, True),
        ({**IN_LAMBDA, "AWS_SAM_LOCAL": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task"}, False),
    ],
)
def test_tracing_is_on_in_lambda_only(environ: dict[str, str], enabled: bool) -> None:
    assert tracing_enabled(environ) is enabled


def test_outside_lambda_there_is_no_tracer() -> None:
    assert tracer() is None


OUTSIDE_LAMBDA = f"""
import json, sys
for name in {HANDLERS!r}:
    __import__(name + ".handler")
from tests.support.events import function_url_event, lambda_context
import webhooks.handler
webhooks.handler.lambda_handler(function_url_event("GET", "/nowhere"), lambda_context("leadcrm-webhooks"))
print(json.dumps({{"xray": "aws_xray_sdk" in sys.modules, "wrapt": "wrapt" in sys.modules}}))
"""


def test_outside_lambda_no_handler_loads_the_xray_sdk_or_warns() -> None:
    result = run_python(OUTSIDE_LAMBDA, without_lambda())
    assert last_json_line(result) == {"xray": False, "wrapt": False}
    assert result.stderr == ""


IN_LAMBDA_PROBE = """
import json, sys
from tests.support.events import function_url_event, lambda_context
import webhooks.handler
cold_start = {"botocore.client": "botocore.client" in sys.modules, "asyncio": "asyncio" in sys.modules}
webhooks.handler.lambda_handler(function_url_event("GET", "/nowhere"), lambda_context("leadcrm-webhooks"))

from leadcrm.platform.db import statements
from leadcrm.platform.telemetry import instrumented

@instrumented()
def three_statements(event, context):
    with statements.traced_unit("## unit of work"):
        for _ in range(3):
            statements.before_cursor_execute()
            statements.after_cursor_execute()

three_statements({}, lambda_context("leadcrm-probe"))
import boto3, botocore.client
print(json.dumps({"coldStart": cold_start, "patched": hasattr(botocore.client, "_xray_enabled")}))
"""


@pytest.fixture(scope="module")
def in_lambda() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One process that believes it runs in Lambda: what it printed, and the subsegments it sent."""
    daemon = XRayDaemon()
    try:
        printed = last_json_line(run_python(IN_LAMBDA_PROBE, daemon.lambda_environment()))
        return printed, daemon.subsegments()
    finally:
        daemon.close()


def test_in_lambda_botocore_is_patched_only_once_boto3_is_imported(in_lambda: tuple[dict[str, Any], Any]) -> None:
    printed, _ = in_lambda
    assert printed["coldStart"]["botocore.client"] is False
    assert printed["patched"] is True


def test_in_lambda_tracing_loads_no_asyncio_into_the_webhook_receiver(in_lambda: tuple[dict[str, Any], Any]) -> None:
    """wrapt 2 (the X-Ray SDK's dependency) imports asyncio and importlib.metadata: ~30 ms of a cold start."""
    printed, _ = in_lambda
    assert printed["coldStart"]["asyncio"] is False


def test_in_lambda_the_handler_is_a_subsegment_without_its_response(in_lambda: tuple[Any, list[Any]]) -> None:
    _, subsegments = in_lambda
    handler = named(subsegments, "## lambda_handler")
    assert handler["trace_id"] == TRACE_ROOT
    assert handler["annotations"] == {"ColdStart": True, "Service": "leadcrm"}
    assert "metadata" not in handler  # neither the response nor an error's details


def test_in_lambda_a_unit_of_work_is_a_subsegment_with_its_statement_count(in_lambda: tuple[Any, list[Any]]) -> None:
    _, subsegments = in_lambda
    unit = named(subsegments, "## unit of work")
    assert unit["metadata"]["leadcrm"]["statements"] == 3
    assert unit["parent_id"] == named(subsegments, "## three_statements")["id"]


def test_an_invocation_keeps_its_log_keys_while_another_thread_runs_another_function() -> None:
    """The local stack runs its functions in threads of one process: each line names its own function and
    request, however the invocations interleave."""
    first_logged, second_done = threading.Event(), threading.Event()

    @instrumented(correlation_id_path="requestContext.requestId")
    def first(event: dict[str, Any], context: Any) -> None:
        logger.info("first, before")
        first_logged.set()
        assert second_done.wait(5)
        logger.info("first, after")

    @instrumented(correlation_id_path="requestContext.requestId")
    def second(event: dict[str, Any], context: Any) -> None:
        assert first_logged.wait(5)
        logger.info("second")
        second_done.set()

    with captured_logs() as logs:
        threads = [
            threading.Thread(target=first, args=({"requestContext": {"requestId": "r-1"}}, lambda_context("one"))),
            threading.Thread(target=second, args=({"requestContext": {"requestId": "r-2"}}, lambda_context("two"))),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    seen = {line["message"]: (line["function_name"], line["correlation_id"]) for line in logs.lines}
    assert seen == {"first, before": ("one", "r-1"), "first, after": ("one", "r-1"), "second": ("two", "r-2")}


def test_an_invocation_leaves_no_keys_behind() -> None:
    @instrumented(correlation_id_path="requestContext.requestId")
    def handler(event: dict[str, Any], context: Any) -> None:
        logger.info("inside")

    handler({"requestContext": {"requestId": "r-3"}}, lambda_context("three"))
    with captured_logs() as logs:
        logger.info("after")
    assert "correlation_id" not in logs.one("after")
    assert "function_name" not in logs.one("after")


def test_a_stdlib_logger_of_the_core_logs_through_the_service_logger() -> None:
    import logging

    @instrumented(correlation_id_path="requestContext.requestId")
    def handler(event: dict[str, Any], context: Any) -> None:
        logging.getLogger("leadcrm.leads.capture").info("from the core", extra={"leadId": "l-1"})

    with captured_logs() as logs:
        handler({"requestContext": {"requestId": "r-4"}}, lambda_context("four"))
    line = logs.one("from the core")
    assert (line["correlation_id"], line["function_name"], line["leadId"]) == ("r-4", "four", "l-1")
    assert line["service"] == "leadcrm"


MALFORMED_RECORD = sqs_record("not json", message_id="m-1", queue_name="leadcrm-task-lifecycle")


@pytest.mark.parametrize(
    ("function", "event", "correlation_id"),
    [
        ("api", http_api_event("GET", "/nowhere", sub="someone"), None),
        ("task_lifecycle", sqs_event(MALFORMED_RECORD), "m-1"),
    ],
)
def test_the_local_stack_names_the_function_on_every_line(
    function: str, event: dict[str, Any], correlation_id: str | None
) -> None:
    """The local stack invokes the handlers in this process, with a context naming each function."""
    from infra.local.lambdas import LocalLambdas

    lambdas = LocalLambdas()
    lambdas.load()
    with captured_logs() as logs:
        lambdas.invoke(function, event)
    assert logs.lines
    assert {line["function_name"] for line in logs.lines} == {function}
    expected = correlation_id or event["requestContext"]["requestId"]
    assert {line["correlation_id"] for line in logs.lines} == {expected}
