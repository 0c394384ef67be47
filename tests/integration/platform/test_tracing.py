"""In Lambda, a request's trace shows where its time went: the handler, each unit of work with the statements it
sent (they add up to the request line's count), and each AWS call, published after the unit committed.

The tracer is per process and this one is no Lambda, so a second process that believes it is one (the Lambda
variables, a trace header, a stand-in X-Ray daemon on a UDP port) serves one real request against this
module's database, with moto for AWS."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.factories import make_caller
from tests.support.xray import TRACE_ROOT, XRayDaemon, last_json_line, named, run_python

ONE_REQUEST = """
import json, sys
from moto import mock_aws
with mock_aws():
    from tests.support.aws import EVENT_BUS, make_event_bus
    make_event_bus(EVENT_BUS)
    from tests.support.api import call_api, leads_path
    from tests.support.logs import captured_logs
    with captured_logs() as logs:
        response = call_api("POST", leads_path(sys.argv[1]), sub=sys.argv[2], body={"name": "Ada Lovelace"})
    print(json.dumps({"status": response.status, "request": logs.one("request")}))
"""


@pytest.fixture(scope="module")
def traced_request() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    caller = make_caller()
    daemon = XRayDaemon()
    try:
        result = run_python(ONE_REQUEST, daemon.lambda_environment(), str(caller.org_id), caller.sub)
        return last_json_line(result), daemon.subsegments()
    finally:
        daemon.close()


def test_the_request_is_one_handler_subsegment_in_the_lambda_trace(traced_request: Any) -> None:
    printed, subsegments = traced_request
    assert printed["status"] == 201
    handler = named(subsegments, "## lambda_handler")
    assert {s["trace_id"] for s in subsegments} == {TRACE_ROOT}
    assert handler["annotations"]["Service"] == "leadcrm"


def test_its_units_of_work_carry_every_statement_the_request_sent(traced_request: Any) -> None:
    printed, subsegments = traced_request
    units = [s for s in subsegments if s["name"] in ("## unit of work", "## transaction")]
    assert units
    assert sum(u["metadata"]["leadcrm"]["statements"] for u in units) == printed["request"]["statementCount"]


def test_publishing_the_events_is_an_aws_subsegment_after_the_unit_of_work(traced_request: Any) -> None:
    _, subsegments = traced_request
    (publish,) = [s for s in subsegments if s.get("namespace") == "aws" and s["name"] == "events"]
    handler = named(subsegments, "## lambda_handler")
    assert publish["aws"]["operation"] == "PutEvents"
    assert publish["parent_id"] == handler["id"]
    last_unit_end = max(s["end_time"] for s in subsegments if s["name"] == "## unit of work")
    assert publish["start_time"] >= last_unit_end
