"""The one rule every consumer applies: which failures can never succeed (rejected) and which may (retried)."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ParamValidationError
from pg8000.exceptions import DatabaseError, InterfaceError
from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import DBAPIError, OperationalError, StatementError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from leadcrm.platform.errors import AppError, NotFound
from leadcrm.platform.failures import Rejected, TransientFailure, classify, json_object, reading
from leadcrm.platform.json_limits import JsonRefused


def _server_error(sqlstate: str) -> DBAPIError:
    return DBAPIError("SELECT 1", {}, DatabaseError({"S": "ERROR", "C": sqlstate, "M": "Key (email)=(ada@x) …"}))


def _client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op")  # type: ignore[arg-type]


class _Model(BaseModel):
    n: int


def _validation_error() -> ValidationError:
    try:
        _Model(n="x")  # type: ignore[arg-type]
    except ValidationError as error:
        return error
    raise AssertionError


PERMANENT = {
    "unique violation": (_server_error("23505"), "constraint"),
    "not null violation": (_server_error("23502"), "constraint"),
    "invalid text for a type": (_server_error("22P02"), "constraint"),
    "a trigger's RAISE": (_server_error("P0001"), "constraint"),
    "a bind processor's ValueError": (StatementError("x", "SELECT", {}, ValueError("no")), "invalid_data"),
    "our refusal": (NotFound("gone", code="LEAD_NOT_FOUND"), "refused"),
    "a body we do not parse": (JsonRefused("deep"), "refused"),
    "a pydantic validation error": (_validation_error(), "invalid_data"),
    "a ValueError": (ValueError("bad"), "invalid_data"),
    "a payload 5 read as an object": (AttributeError("'int' object has no attribute 'get'"), "invalid_data"),
    "a missing key": (KeyError("payload"), "invalid_data"),
    "JSON that is not JSON": (json.JSONDecodeError("x", "doc", 0), "invalid_data"),
    "AWS refusing the request": (_client_error("InvalidParameterValue", 400), "aws_refused"),
    "a request botocore refuses to send": (ParamValidationError(report="too long"), "aws_refused"),
    "a reason of our own": (Rejected("malformed", "the payload is an int"), "malformed"),
}

TRANSIENT = {
    "deadlock": _server_error("40P01"),
    "serialization failure": _server_error("40001"),
    "statement timeout": _server_error("57014"),
    "admin shutdown": _server_error("57P01"),
    "too many connections": _server_error("53300"),
    "lock not available": _server_error("55P03"),
    "a column a deploy is still migrating": _server_error("42703"),
    "connection refused": OperationalError("connect", {}, InterfaceError("network error")),
    "the connection broke": DBAPIError("SELECT 1", {}, InterfaceError("network error"), connection_invalidated=True),
    "the pool timing out": PoolTimeout("QueuePool limit"),
    "the driver's own network error": InterfaceError("network error"),
    "AWS throttling": _client_error("ThrottlingException", 400),
    "S3 slowing down": _client_error("SlowDown", 503),
    "AWS failing": _client_error("InternalError", 500),
    "access not granted yet": _client_error("AccessDeniedException", 403),
    "a queue not deployed yet": _client_error("AWS.SimpleQueueService.NonExistentQueue", 400),
    "no endpoint": EndpointConnectionError(endpoint_url="https://sqs"),
    "a socket timeout": TimeoutError(),
    "a connection reset": ConnectionResetError(),
    "an outside service failing": TransientFailure("Graph 503"),
    "a rate limit of ours": type("RateLimited", (AppError,), {"status": 429, "code": "RATE_LIMITED"})("slow down"),
    "an error nobody named": RuntimeError("?"),
}


@pytest.mark.parametrize("kind", PERMANENT)
def test_a_failure_that_will_happen_again_is_permanent(kind):
    error, reason = PERMANENT[kind]
    failure = classify(error)
    assert (failure.transient, failure.reason) == (False, reason)


@pytest.mark.parametrize("kind", TRANSIENT)
def test_a_failure_that_may_pass_is_transient(kind):
    assert classify(TRANSIENT[kind]).transient


def test_the_detail_names_the_error_and_its_code_never_the_message_text():
    detail = classify(_server_error("23505")).detail
    assert "23505" in detail and "ada@x" not in detail


@pytest.mark.parametrize("error", [KeyError("x"), TypeError("x"), ValueError("x"), AttributeError("x")])
def test_a_data_error_while_reading_a_message_is_malformed(error):
    with pytest.raises(Rejected) as rejected, reading("the message"):
        raise error
    assert rejected.value.reason == "malformed"


@pytest.mark.parametrize("value", [5, [], None, "text"])
def test_a_payload_that_is_not_an_object_is_malformed(value):
    with pytest.raises(Rejected) as rejected:
        json_object(value, "the payload")
    assert rejected.value.reason == "malformed"
