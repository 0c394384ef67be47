"""The API's logs connect: every line of a request carries API Gateway's request id as its correlation id, and
each request ends with one structured line (route template, method, status, duration, organization, statement
count) that holds nothing the caller sent."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import event

from leadcrm.platform.db.engine import get_engine
from tests.support.api import invoke, leads_path
from tests.support.events import http_api_event
from tests.support.factories import make_caller
from tests.support.logs import CapturedLogs, captured_logs

# What a caller sends that must never reach a log line (a lead's contact details, a query, a header).
EMAIL = "dana.secret@example.com"
PHONE = "+447700900461"
NAME = "Dana Unloggable"
QUERY_MARK = "querymark7431"
HEADER_MARK = "headermark5519"
PATH_MARK = "pathmark8862"


def _request(method: str, path: str, caller: Any, **kwargs: Any) -> tuple[dict[str, Any], int, CapturedLogs]:
    event = http_api_event(method, path, sub=caller.sub, **kwargs)
    with captured_logs() as logs:
        response = invoke(event)
    return event, response.status, logs


def _new_lead_body() -> dict[str, Any]:
    return {"name": NAME, "email": EMAIL, "phone": PHONE}


def test_every_line_of_a_request_carries_its_api_gateway_request_id():
    """Without an event bus the create logs the failed publish from the core (a stdlib `leadcrm.*` logger)
    before the request line: two loggers, one correlation id."""
    caller = make_caller()
    event, status, logs = _request("POST", leads_path(caller.org_id), caller, body=_new_lead_body())
    assert status == 201
    assert logs.with_message("publishing after commit failed; the outbox relay will retry")
    assert len(logs.lines) >= 2
    assert {line.get("correlation_id") for line in logs.lines} == {event["requestContext"]["requestId"]}


@pytest.mark.usefixtures("event_bus")
def test_a_request_ends_with_one_line_naming_its_route_template():
    caller = make_caller()
    _, created, _ = _request("POST", leads_path(caller.org_id), caller, body={"name": "Ada Lovelace"})
    assert created == 201
    with captured_logs() as listing:
        invoke(http_api_event("GET", leads_path(caller.org_id), sub=caller.sub))
    line = listing.one("request")
    assert line["route"] == "/organizations/{orgId}/leads"
    assert line["method"] == "GET"
    assert line["status"] == 200
    assert line["organizationId"] == str(caller.org_id)
    assert line["durationMs"] > 0
    assert line["function_name"] == "leadcrm-api"


@pytest.mark.usefixtures("event_bus")
def test_the_request_line_counts_every_statement_the_request_sent():
    caller = make_caller()
    sent: list[str] = []

    def count(*args: Any) -> None:
        sent.append(args[2])

    event.listen(get_engine(), "before_cursor_execute", count)
    try:
        _, status, logs = _request("POST", leads_path(caller.org_id), caller, body=_new_lead_body())
    finally:
        event.remove(get_engine(), "before_cursor_execute", count)
    assert status == 201
    line = logs.one("request")
    assert line["statementCount"] == len(sent) > 0
    assert 0 <= line["statementMs"] <= line["durationMs"]


@pytest.mark.usefixtures("event_bus")
def test_nothing_the_caller_sent_reaches_the_logs():
    caller = make_caller()
    _, status, logs = _request(
        "POST",
        leads_path(caller.org_id),
        caller,
        body=_new_lead_body(),
        query={"note": QUERY_MARK},
        headers={"x-note": HEADER_MARK},
    )
    assert status == 201
    assert logs.lines
    for secret in (EMAIL, PHONE, PHONE.lstrip("+"), NAME, "Dana", QUERY_MARK, HEADER_MARK):
        assert secret not in logs.text


def test_an_unknown_path_is_logged_as_unmatched_without_the_path():
    caller = make_caller()
    _, status, logs = _request("GET", f"/organizations/{caller.org_id}/{PATH_MARK}", caller)
    assert status == 404
    line = logs.one("request")
    assert line["route"] == "(unmatched)"
    assert line["errorCode"] == "ROUTE_NOT_FOUND"
    assert "organizationId" not in line
    assert PATH_MARK not in logs.text


def test_a_lead_path_is_logged_as_its_template_without_the_lead_id():
    caller = make_caller()
    lead_id = uuid.uuid4()
    _, status, logs = _request("GET", leads_path(caller.org_id, lead_id), caller)
    assert status == 404
    line = logs.one("request")
    assert line["route"] == "/organizations/{orgId}/leads/{leadId}"
    assert line["errorCode"] == "LEAD_NOT_FOUND"
    assert str(lead_id) not in logs.text


def test_a_refused_caller_is_logged_with_the_refusal_code():
    caller, outsider = make_caller(), make_caller()
    _, status, logs = _request("GET", leads_path(caller.org_id), outsider)
    assert status == 403
    line = logs.one("request")
    assert (line["errorCode"], line["organizationId"]) == ("NOT_A_MEMBER", str(caller.org_id))


def test_a_path_without_an_organization_uuid_logs_no_organization():
    caller = make_caller()
    _, status, logs = _request("GET", f"/organizations/{PATH_MARK}/leads", caller)
    assert status == 403
    line = logs.one("request")
    assert line["route"] == "/organizations/{orgId}/leads"
    assert "organizationId" not in line
    assert PATH_MARK not in logs.text


def test_a_body_refused_before_routing_still_gets_its_line():
    caller = make_caller()
    event, status, logs = _request(
        "POST", leads_path(caller.org_id), caller, body=EMAIL, headers={"content-type": "text/plain"}
    )
    assert status == 415
    line = logs.one("request")
    assert (line["route"], line["status"], line["errorCode"]) == ("(unmatched)", 415, "UNSUPPORTED_MEDIA_TYPE")
    assert line["statementCount"] == 0
    assert line["correlation_id"] == event["requestContext"]["requestId"]
    assert EMAIL not in logs.text
