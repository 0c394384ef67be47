"""One structured log line per API request, with what an operator needs and nothing of what was sent.

`{"message": "request", "route": "/organizations/{orgId}/leads/{leadId}", "method": "PATCH", "status": 200,
"durationMs": 23.4, "organizationId": "…", "statementCount": 6, "statementMs": 7.9, "errorCode": …}`, plus the
keys every line of the request has (`correlation_id`: API Gateway's request id, the function's name and
request id, `xray_trace_id`). The route is the template that answered, never the raw path (its ids, and
whatever a caller put in an unknown path); the organization id only when the path holds a UUID there. Nothing
from the body, the query string or the headers. `errorCode` is our own code from an error answer
(`NOT_A_MEMBER`, `LEAD_CHANNEL_BLOCKED`): constants of ours, never anything the caller sent.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

from leadcrm.platform.db import statements
from leadcrm.platform.ids import parse_uuid
from leadcrm.platform.telemetry import logger

UNMATCHED = "(unmatched)"  # no route answered: an unknown path, or a body refused before routing (413, 415)
# Powertools answers an unknown path through a catch-all route of its own, whose path is the raw path.
_CATCH_ALL = "^.*$"
_ERROR_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")


class RoutedResolver(APIGatewayHttpResolver):
    """The HTTP resolver, remembering the route template and the path's organization id of the request it
    last answered: Powertools keeps the matched route in its routing context only until the request ends."""

    answered_route: str = UNMATCHED
    answered_organization: str | None = None

    def clear_context(self) -> None:
        route = self.context.get("_route")
        matched = route is not None and route.rule.pattern != _CATCH_ALL
        self.answered_route = route.openapi_path if matched else UNMATCHED
        organization = parse_uuid(str((self.context.get("_route_args") or {}).get("orgId", ""))) if matched else None
        self.answered_organization = str(organization) if organization is not None else None
        super().clear_context()


def logged(app: RoutedResolver, event: dict[str, Any], answer: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`answer()`, the request's response, with its one log line written after it."""
    app.answered_route, app.answered_organization = UNMATCHED, None
    started = time.perf_counter()
    response: dict[str, Any] | None = None
    with statements.counting() as tally:
        try:
            response = answer()
            return response
        finally:
            _log(app, event, response, time.perf_counter() - started, tally)


def _log(
    app: RoutedResolver,
    event: dict[str, Any],
    response: dict[str, Any] | None,
    seconds: float,
    tally: statements.Tally,
) -> None:
    status = int(response.get("statusCode") or 500) if response is not None else 500  # None: it raised
    fields: dict[str, Any] = {
        "route": app.answered_route,
        "method": str((event.get("requestContext") or {}).get("http", {}).get("method") or "").upper(),
        "status": status,
        "durationMs": round(seconds * 1000, 1),
        "organizationId": app.answered_organization,
        "statementCount": tally.statements,
        "statementMs": tally.milliseconds,
    }
    if status >= 400 and response is not None:
        fields["errorCode"] = _error_code(response)
    logger.info("request", extra=fields)


def _error_code(response: dict[str, Any]) -> str | None:
    """The `error.code` of one of our error answers (always a small JSON body), if it looks like one of ours."""
    body = response.get("body")
    if response.get("isBase64Encoded") or not isinstance(body, str) or len(body) > 64 * 1024:
        return None
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else None
