"""Locally, as in AWS, a request's log lines name the function that wrote them and share the request id the
gateway answered with (`apigw-requestid`), and the request ends with its one structured line."""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.support.local_stack import LocalStackClient


def _lines_of(local_stack: LocalStackClient, request_id: str, *, timeout: float = 10) -> list[dict[str, Any]]:
    """The stack's log lines of one request, once its request line has been printed."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [line for line in local_stack.log_lines() if line.get("correlation_id") == request_id]
        if any(line.get("message") == "request" for line in lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def test_a_local_request_logs_under_its_function_and_request_id(local_stack: LocalStackClient) -> None:
    token = local_stack.token_for(f"stranger-{uuid.uuid4()}")
    reply = local_stack.request("GET", f"/organizations/{uuid.uuid4()}/leads", token=token)
    assert reply.status == 403
    request_id = {k.lower(): v for k, v in reply.headers.items()}["apigw-requestid"]
    lines = _lines_of(local_stack, request_id)
    (request,) = [line for line in lines if line["message"] == "request"]
    assert {line["function_name"] for line in lines} == {"api"}
    assert (request["route"], request["status"], request["errorCode"]) == (
        "/organizations/{orgId}/leads",
        403,
        "NOT_A_MEMBER",
    )
