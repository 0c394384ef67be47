"""Fault injection on the local stack's stand-ins: the next calls to Graph, SES or EventBridge fail as the real
service fails, so what is tested is the product's own handling of an outage, a throttle or an expired token.

`POST /_local/faults {"service", "mode", "count"?}` arms one fault per service (a new one replaces the old):
the next `count` calls fail (no count: every call until it is cleared). `GET /_local/faults` lists the armed
ones with `callsLeft` and `failuresServed`; `DELETE /_local/faults[?service=]` clears them.

- Graph is this stack's own stand-in (infra/local/graph.py), which asks `take("graph")` before it answers and
  answers Graph's own error bodies (`graph_error`).
- SES and EventBridge are moto, reached through botocore. The fault is a `before-send` handler registered among
  botocore's built-in handlers (`install`), so every session made after it (the stack's own and each
  function's, which `leadcrm.platform.adapters.aws` makes per client) carries it. A handler that returns a
  response short-circuits the HTTP call: botocore then parses that response with the service's protocol and
  runs its own retries on it, as it would against AWS. A fault counts HTTP attempts, not SDK calls: the
  product's clients make up to 4 (`max_attempts: 3` retries, standard mode), so `count: 3` is absorbed by
  botocore's retries and `count: 4` fails one call.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from typing import Any

SERVICES = ("graph", "ses", "eventbridge")
MODES = ("error5xx", "throttle", "tokenExpired")
MAX_COUNT = 100_000
# botocore's event names carry the service id, hyphenized: `before-send.sesv2.SendEmail`.
BOTOCORE_SERVICES = {"sesv2": "ses", "ses": "ses", "eventbridge": "eventbridge"}


class FaultRefused(ValueError):
    """A body `POST /_local/faults` cannot arm (answered 400 VALIDATION_FAILED with this message)."""


@dataclass
class Fault:
    service: str
    mode: str
    calls_left: int | None  # None: every call until cleared
    failures_served: int = 0

    def view(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "mode": self.mode,
            "callsLeft": self.calls_left,
            "failuresServed": self.failures_served,
        }


def parse_fault(data: dict[str, Any]) -> tuple[str, str, int | None]:
    """(service, mode, count) of a `POST /_local/faults` body; FaultRefused naming what is wrong."""
    unknown = sorted(set(data) - {"service", "mode", "count"})
    if unknown:
        raise FaultRefused(f"Unknown field(s): {', '.join(unknown)}.")
    service, mode, count = data.get("service"), data.get("mode"), data.get("count")
    if service not in SERVICES:
        raise FaultRefused(f"service must be one of {', '.join(SERVICES)}.")
    if mode not in MODES:
        raise FaultRefused(f"mode must be one of {', '.join(MODES)}.")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT):
        raise FaultRefused(f"count must be an integer from 1 to {MAX_COUNT} (leave it out: every call until cleared).")
    return str(service), str(mode), count


class FaultRegistry:
    """The armed faults, one per service; thread-safe (the HTTP threads, the pollers and the scheduler share it)."""

    def __init__(self) -> None:
        self._faults: dict[str, Fault] = {}
        self._lock = threading.Lock()

    def arm(self, service: str, mode: str, count: int | None = None) -> Fault:
        with self._lock:
            fault = Fault(service, mode, count)
            self._faults[service] = fault
            return Fault(fault.service, fault.mode, fault.calls_left)

    def take(self, service: str) -> str | None:
        """The mode this call to `service` fails with, counting it; None when the call goes through. A fault
        whose count is spent is no longer armed."""
        with self._lock:
            fault = self._faults.get(service)
            if fault is None:
                return None
            fault.failures_served += 1
            if fault.calls_left is not None:
                fault.calls_left -= 1
                if fault.calls_left <= 0:
                    del self._faults[service]
            return fault.mode

    def active(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._faults[s].view() for s in SERVICES if s in self._faults]

    def clear(self, service: str | None = None) -> list[dict[str, Any]]:
        """Disarm one service's fault, or all; what was cleared."""
        with self._lock:
            names = [service] if service is not None else list(SERVICES)
            return [self._faults.pop(s).view() for s in names if s in self._faults]


# The one registry of this process: the Graph stand-in and the botocore handler both read it.
registry = FaultRegistry()


# --- Graph ------------------------------------------------------------------------------------------------
def graph_error(mode: str) -> tuple[int, dict[str, Any]]:
    """(status, body) as Graph answers each fault (developers.facebook.com/docs/graph-api/guides/error-handling
    and /overview/rate-limiting): code 2 is a temporary outage, code 32 the page-level rate limit a page
    token meets (Business Use Case limits), 190/463 an expired access token."""
    trace = uuid.uuid4().hex[:11]
    if mode == "error5xx":
        return 500, {
            "error": {
                "message": "An unexpected error has occurred. Please retry your request later.",
                "type": "OAuthException",
                "is_transient": True,
                "code": 2,
                "fbtrace_id": trace,
            }
        }
    if mode == "throttle":
        return 400, {
            "error": {
                "message": "(#32) Page request limit reached",
                "type": "OAuthException",
                "is_transient": True,
                "code": 32,
                "fbtrace_id": trace,
            }
        }
    return 400, {
        "error": {
            "message": "Error validating access token: Session has expired. The current time is later than the "
            "token's expiry.",
            "type": "OAuthException",
            "code": 190,
            "error_subcode": 463,
            "fbtrace_id": trace,
        }
    }


# --- SES and EventBridge (botocore) ---------------------------------------------------------------------
# (status, error code, message) per protocol. SES v2 is rest-json (the code travels in x-amzn-ErrorType),
# EventBridge is JSON 1.1 (`__type` in the body); both carry AWS's common errors.
_AWS_ERRORS: dict[str, dict[str, tuple[int, str, str]]] = {
    "ses": {
        "error5xx": (503, "ServiceUnavailable", "Service is unable to handle request."),
        "throttle": (429, "TooManyRequestsException", "Maximum sending rate exceeded."),
        "tokenExpired": (403, "ExpiredTokenException", "The security token included in the request is expired"),
    },
    "eventbridge": {
        "error5xx": (500, "InternalException", "Internal service error."),
        "throttle": (400, "ThrottlingException", "Rate exceeded"),
        "tokenExpired": (400, "ExpiredTokenException", "The security token included in the request is expired"),
    },
}


class _Body:
    """The `raw` of an AWSResponse: what botocore streams the body from."""

    def __init__(self, payload: bytes) -> None:
        self._payload = payload

    def stream(self, **_: Any) -> Any:
        yield self._payload


def aws_error_response(service: str, mode: str, url: str) -> Any:
    """The botocore AWSResponse AWS answers for this fault."""
    from botocore.awsrequest import AWSResponse

    status, code, message = _AWS_ERRORS[service][mode]
    request_id = str(uuid.uuid4())
    headers = {"x-amzn-RequestId": request_id, "Content-Type": "application/x-amz-json-1.1"}
    if service == "ses":
        headers = {"x-amzn-RequestId": request_id, "x-amzn-ErrorType": f"{code}:", "Content-Type": "application/json"}
        body = {"message": message}
    else:
        body = {"__type": code, "message": message}
    return AWSResponse(url, status, headers, _Body(json.dumps(body).encode()))


def before_send(request: Any, event_name: str = "", **_: Any) -> Any:
    """botocore's `before-send`: AWS's error answer when the service has a fault armed, else None (sent)."""
    parts = event_name.split(".")
    service = BOTOCORE_SERVICES.get(parts[1]) if len(parts) > 1 else None
    if service is None:
        return None
    mode = registry.take(service)
    return None if mode is None else aws_error_response(service, mode, request.url)


def install() -> None:
    """Every botocore session made from now on carries `before_send` (idempotent). Clients cached before
    this call are dropped, so the functions' clients are made again with it."""
    from botocore import handlers

    spec = ("before-send", before_send)
    if spec not in handlers.BUILTIN_HANDLERS:
        handlers.BUILTIN_HANDLERS.append(spec)
    from leadcrm.platform.adapters.aws import reset_clients

    reset_clients()


# --- the /_local/faults routes (registered in infra/local/stack.py's LOCAL_ROUTES) ------------------------
Reply = tuple[int, dict[str, str], bytes]


def _reply(status: int, body: dict[str, Any]) -> Reply:
    return status, {"content-type": "application/json"}, json.dumps(body).encode()


def arm_route(stack: Any, data: dict[str, Any]) -> Reply:
    """`POST /_local/faults`: 201 with the armed fault, or 400 VALIDATION_FAILED."""
    try:
        service, mode, count = parse_fault(data)
    except FaultRefused as refused:
        return _reply(400, {"error": {"code": "VALIDATION_FAILED", "message": str(refused)}})
    return _reply(201, {"data": registry.arm(service, mode, count).view()})


def list_route(stack: Any, query: dict[str, str]) -> Reply:
    """`GET /_local/faults`: the armed faults, in the order of SERVICES."""
    return _reply(200, {"data": registry.active()})


def clear_route(stack: Any, query: dict[str, str]) -> Reply:
    """`DELETE /_local/faults[?service=]`: what was cleared (clearing nothing is not an error)."""
    unknown = sorted(set(query) - {"service"})
    service = query.get("service")
    if unknown:
        message = f"Unknown parameter(s): {', '.join(unknown)}."
    elif service is not None and service not in SERVICES:
        message = f"service must be one of {', '.join(SERVICES)}."
    else:
        return _reply(200, {"data": {"cleared": registry.clear(service)}})
    return _reply(400, {"error": {"code": "VALIDATION_FAILED", "message": message}})
