"""The local stack's fault registry (`/_local/faults`): a fault fails the next `count` calls (or every call
until cleared), is listed with what it has left and served, and is cleared per service or all at once; a body
it cannot arm is refused naming the field. Each fault reaches the product as the real service's failure:
botocore parses it into the ClientError AWS's answer gives, and Graph's body carries Graph's codes."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.local import faults
from infra.local.faults import FaultRefused, FaultRegistry, parse_fault
from leadcrm.ingestion.meta_graph import GraphError
from leadcrm.platform.failures import classify, refused_for_now


def test_a_fault_with_a_count_fails_that_many_calls_then_lets_calls_through():
    registry = FaultRegistry()
    registry.arm("graph", "error5xx", 2)
    assert [registry.take("graph") for _ in range(3)] == ["error5xx", "error5xx", None]
    assert registry.active() == []


def test_a_fault_without_a_count_fails_every_call_until_cleared():
    registry = FaultRegistry()
    registry.arm("ses", "throttle")
    assert all(registry.take("ses") == "throttle" for _ in range(50))
    assert registry.active() == [{"service": "ses", "mode": "throttle", "callsLeft": None, "failuresServed": 50}]
    registry.clear()
    assert registry.take("ses") is None


def test_a_fault_fails_only_its_own_service():
    registry = FaultRegistry()
    registry.arm("eventbridge", "tokenExpired")
    assert (registry.take("ses"), registry.take("graph"), registry.take("eventbridge")) == (None, None, "tokenExpired")


def test_the_list_shows_calls_left_and_failures_served():
    registry = FaultRegistry()
    registry.arm("graph", "throttle", 5)
    registry.take("graph")
    registry.take("graph")
    assert registry.active() == [{"service": "graph", "mode": "throttle", "callsLeft": 3, "failuresServed": 2}]


def test_arming_a_service_again_replaces_its_fault():
    registry = FaultRegistry()
    registry.arm("graph", "throttle", 5)
    registry.arm("graph", "error5xx")
    assert registry.active() == [{"service": "graph", "mode": "error5xx", "callsLeft": None, "failuresServed": 0}]


def test_clearing_one_service_keeps_the_others():
    registry = FaultRegistry()
    registry.arm("graph", "error5xx")
    registry.arm("ses", "throttle")
    cleared = registry.clear("graph")
    assert [f["service"] for f in cleared] == ["graph"]
    assert [f["service"] for f in registry.active()] == ["ses"]


@settings(max_examples=25, deadline=None)
@given(count=st.integers(min_value=1, max_value=40), calls=st.integers(min_value=0, max_value=60))
def test_a_counted_fault_serves_exactly_min_of_count_and_calls_failures(count: int, calls: int):
    registry = FaultRegistry()
    registry.arm("ses", "error5xx", count)
    served = sum(1 for _ in range(calls) if registry.take("ses") is not None)
    assert served == min(count, calls)


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({}, "service"),
        ({"service": "sqs", "mode": "throttle"}, "service"),
        ({"service": "graph"}, "mode"),
        ({"service": "graph", "mode": "slow"}, "mode"),
        ({"service": "graph", "mode": "throttle", "count": 0}, "count"),
        ({"service": "graph", "mode": "throttle", "count": -1}, "count"),
        ({"service": "graph", "mode": "throttle", "count": "3"}, "count"),
        ({"service": "graph", "mode": "throttle", "count": True}, "count"),
        ({"service": "graph", "mode": "throttle", "count": 1.5}, "count"),
        ({"service": "graph", "mode": "throttle", "count": 10**9}, "count"),
        ({"service": "graph", "mode": "throttle", "times": 3}, "times"),
    ],
)
def test_a_body_that_names_no_fault_is_refused_naming_the_field(body, names):
    with pytest.raises(FaultRefused, match=names):
        parse_fault(body)


def test_the_arm_route_answers_400_validation_failed_in_the_error_shape():
    status, _, payload = faults.arm_route(None, {"service": "graph", "mode": "nope"})
    assert status == 400
    assert __import__("json").loads(payload)["error"]["code"] == "VALIDATION_FAILED"


def test_the_clear_route_refuses_an_unknown_service():
    status, _, _ = faults.clear_route(None, {"service": "sqs"})
    assert status == 400


# --- the faults as the product meets them -----------------------------------------------------------------
@pytest.fixture
def armed() -> Iterator[FaultRegistry]:
    yield faults.registry
    faults.registry.clear()


def _client(service: str):
    """A client that never retries (the first answer is the one under test), with the fault handler."""
    client = boto3.session.Session().client(
        service, region_name="eu-west-1", config=Config(retries={"mode": "standard", "total_max_attempts": 1})
    )
    client.meta.events.register_first("before-send", faults.before_send)
    return client


SES_CALL = {
    "FromEmailAddress": "a@mail.leadcrm.local",
    "Destination": {"ToAddresses": ["b@example.com"]},
    "Content": {"Simple": {"Subject": {"Data": "s"}, "Body": {"Text": {"Data": "t"}}}},
}
EVENTS_CALL = {"Entries": [{"Source": "leadcrm", "DetailType": "x", "Detail": "{}", "EventBusName": "b"}]}


@pytest.mark.parametrize(
    ("service", "mode", "code", "status"),
    [
        ("ses", "throttle", "TooManyRequestsException", 429),
        ("ses", "error5xx", "ServiceUnavailable", 503),
        ("ses", "tokenExpired", "ExpiredTokenException", 403),
        ("eventbridge", "throttle", "ThrottlingException", 400),
        ("eventbridge", "error5xx", "InternalException", 500),
        ("eventbridge", "tokenExpired", "ExpiredTokenException", 400),
    ],
)
def test_an_aws_fault_reaches_the_caller_as_the_client_error_aws_answers(armed, service, mode, code, status):
    armed.arm(service, mode, 1)
    with pytest.raises(ClientError) as raised:
        if service == "ses":
            _client("sesv2").send_email(**SES_CALL)
        else:
            _client("events").put_events(**EVENTS_CALL)
    error = raised.value.response
    assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (code, status)
    # the product's own rule: each is worth a retry, and none of them carried the request out
    assert classify(raised.value).transient and refused_for_now(raised.value)


@pytest.mark.parametrize(
    ("mode", "status", "code"), [("error5xx", 500, 2), ("throttle", 400, 32), ("tokenExpired", 400, 190)]
)
def test_a_graph_fault_answers_graphs_own_error_which_graph_fetch_retries(mode, status, code):
    answered_status, body = faults.graph_error(mode)
    assert (answered_status, body["error"]["code"]) == (status, code)
    assert not GraphError(answered_status, str(body["error"]["code"])).lead_is_gone


def test_an_expired_graph_token_carries_graphs_subcode():
    _, body = faults.graph_error("tokenExpired")
    assert (body["error"]["type"], body["error"]["error_subcode"]) == ("OAuthException", 463)
