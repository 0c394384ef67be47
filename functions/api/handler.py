"""API function: API Gateway HTTP API (payload v2) events in, our JSON out.

Routes live in one Router per area; this module names them (each is imported by the first request that
needs it, api.routing), maps every error onto the one error shape, and serves the OpenAPI document. Every
request's log lines carry API Gateway's request id as their correlation id, and each request ends with one
line of its own (api.request_log).
"""

from __future__ import annotations

import base64
import json
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError, ResponseValidationError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from api.http import error_response, json_response, outsider_refusal
from api.operations import BEARER
from api.request_log import logged
from api.routing import LazyResolver, in_resolution_order, index_text
from leadcrm.platform.errors import AppError, BadRequest
from leadcrm.platform.json_limits import BodyTooLarge, loads
from leadcrm.platform.telemetry import instrumented

logger = Logger(service="leadcrm")

# The largest body each kind of route takes (DESIGN.md, "every input has bounds"). Staff routes: 1 MiB holds
# the largest list a body may carry (10,000 lead ids for a bulk email or move, ~390 KB) and 20,000-character
# texts written as \u escapes, with room to spare. The public routes (capture, survey, unsubscribe) take a
# form's worth of fields: 64 KiB.
MAX_BODY_BYTES = 1024 * 1024
PUBLIC_PREFIXES = ("/leads/organization/", "/public/", "/unsubscribe/")
MAX_PUBLIC_BODY_BYTES = 64 * 1024

# One tag per capability (functions/api/<capability>/), in the order a reader meets them.
CAPABILITY_TAGS = {
    "Leads": "Intake (public capture and staff create), lists and detail, moves and placements, archive, "
    "returning leads, conversion, erase, tags and campaigns, assignment rules and staff availability",
    "Pipelines": "Pipelines and their stages",
    "Work": "Follow-ups and touches, tasks, the work queue and the urgent prompt",
    "Conversations": "Threads and messages, internal notes, consent, bulk email and unsubscribe",
    "Tickets": "Helpdesk tickets and their lifecycle, queues, routing rules, settings, SLA reports and surveys",
    "Deals": "The deal pipeline, deals and their transitions, forecast, owner departure",
    "Analytics": "Lead analytics, funnel, response times and attribution (touch log, spend, campaign credit)",
    "Ingestion": "Meta and WhatsApp connections, CSV imports",
    "Integrations": "Outbound webhooks: subscriptions, their delivery logs and replays",
    "Qualification": "Scoring models, enrichment, BANT qualification, merges and pseudonymization",
    "Organization": "The organization's settings and members",
}


def _parse_body(text: str) -> Any:
    """Every body, parsed once per request (the event caches it) and with limits: depth, number sizes, size."""
    return loads(text, max_bytes=MAX_BODY_BYTES)


# A response that breaks its own schema is our bug: a 500, never blamed on the request.
app = LazyResolver(enable_validation=True, response_validation_error_http_code=500, json_body_deserializer=_parse_body)
# Every route module, in the order the full API includes them (api.routing imports each on first need, and
# keeps this order's precedence). Literal paths (…/leads/campaigns, …/leads/bulk-move-stage) come before
# …/leads/<leadId>.
ROUTE_MODULES = tuple(
    f"api.{area}"
    for area in (
        "leads.campaigns",
        "leads.tags",
        "leads.assignment_rules",
        "work.queue",
        "leads.erase",
        "work.follow_ups",
        "leads.lead_moves",
        "leads.conversion",
        "leads.returning",
        "leads.capture",
        "pipelines.pipelines",
        "work.tasks",
        "work.urgent_prompt",
        "ingestion.integrations",
        "ingestion.lead_imports",
        "integrations.webhooks",
        "conversations.conversations",
        "conversations.consent",
        "conversations.bulk_email",
        "conversations.whatsapp",
        "analytics.analytics",
        "analytics.attribution",
        "qualification.qualification",
        "qualification.merges",
        "deals.deals",
        "deals.handovers",
        "directory.organization",
        "tickets.tickets",
        "tickets.ticket_config",
        "leads.leads",
        "leads.lead_reads",
    )
)

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


FORM_POST_PREFIXES = ("/unsubscribe/",)
UNSUPPORTED_MEDIA_TYPE = {"error": {"code": "UNSUPPORTED_MEDIA_TYPE", "message": "Send the body as application/json."}}
NOT_UTF8 = {"error": {"code": "MALFORMED_JSON", "message": "The body is not valid JSON (UTF-8)."}}


def _refused_before_resolving(event: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """Bodies the resolver's validator cannot take: it would parse a form or a multipart body (and fail with
    a 500 on a malformed one), and fail with a 500 on bytes that are not UTF-8, before any middleware runs.
    A body over its route's size limit is refused here too, before anything reads it (a 413 says nothing
    of our rules, so it needs no membership check first)."""
    method = (event.get("requestContext", {}).get("http", {}).get("method") or "").upper()
    body = event.get("body")
    if method not in BODY_METHODS or not body:
        return None
    path = event.get("rawPath") or ""
    limit = MAX_PUBLIC_BODY_BYTES if path.startswith(PUBLIC_PREFIXES) else MAX_BODY_BYTES
    size = len(body) * 3 // 4 if event.get("isBase64Encoded") else len(body.encode("utf-8", "surrogatepass"))
    if size > limit:
        return 413, BodyTooLarge(f"The body is larger than {limit} bytes.").body()
    if path.startswith(FORM_POST_PREFIXES):
        # RFC 8058 one-click: mail clients POST `List-Unsubscribe=One-Click` as a form. The route reads no body,
        # so it is dropped (never parsed, never refused).
        event["body"], event["isBase64Encoded"] = None, False
        return None
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    if "json" not in (headers.get("content-type") or "application/json").lower():
        return 415, UNSUPPORTED_MEDIA_TYPE
    if event.get("isBase64Encoded"):
        try:
            base64.b64decode(body).decode("utf-8")
        except ValueError:  # binascii.Error and UnicodeDecodeError are both ValueErrors
            return 400, NOT_UTF8
    return None


def require_object_body(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response:
    """Every body we accept is a JSON object. The resolver would otherwise take the first element of an
    array as the body (a silent partial create), so anything else is refused before the route runs."""
    event = app.current_event
    is_json = "json" in (event.headers.get("content-type") or "json")
    # json_body: parsed once (the event caches it) by api.handler._parse_body, or refused with JsonRefused
    if event.http_method in BODY_METHODS and event.body and is_json and not isinstance(event.json_body, dict):
        raise BadRequest("The body must be a JSON object.", code="VALIDATION_FAILED")
    return next_middleware(app)


app.use(middlewares=[require_object_body])


def _configure_document() -> None:
    """The document's frame; each operation documents itself where its route is declared (api.operations).
    Only the document reads it, so its models (Powertools' OpenAPI pydantic models) load with the document."""
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, Tag

    app.configure_openapi(
        title="LeadCRM API",
        version="0.1.0",
        description=(
            'Lead management for coaches and studios. JSON is camelCase; a success is `{"data": …}`, a list '
            '`{"data": [...], "nextCursor": "…"|null}` (keyset pages: pass `nextCursor` back as `cursor`), and every '
            'error `{"error": {"code", "message", …}}`: each operation lists the codes it can answer. An id from '
            "another organization answers 404 exactly as an unknown id; a caller who is not a member of the path's "
            "organization gets 403 NOT_A_MEMBER before any other refusal."
        ),
        tags=[Tag(name=name, description=text) for name, text in CAPABILITY_TAGS.items()],
        security_schemes={
            BEARER: HTTPBearer(
                bearerFormat="JWT",
                description="The identity provider's JWT (API Gateway's JWT authorizer verifies it); roles are read "
                "from the organization's memberships on every request, never from the token.",
            )
        },
        security=[{BEARER: []}],
    )


@cache
def every_route_loaded() -> LazyResolver:
    """The resolver with every route module included, and the links between operations written (they need
    every route, and serve only the document): the OpenAPI document, and tests that walk every route."""
    from api.links import link_operations

    app.include_every_module()
    link_operations(app)
    _configure_document()
    return app


@cache
def openapi_schema() -> dict[str, Any]:
    """The OpenAPI document, built once per container from the routes' declarations and types."""
    return json.loads(every_route_loaded().get_openapi_json_schema())


def openapi_text() -> str:
    """The document as `make openapi` commits it: keys sorted, so that a diff shows only what changed."""
    return json.dumps(openapi_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[dict[str, Any]]:
    return json_response(200, openapi_schema())


# Routes declared above are the frame, loaded with this module; every other route comes with its module.
app.configure_modules(ROUTE_MODULES, frame_module=__name__)


def route_index_text() -> str:
    """api/route_index.json as `make openapi` commits it: every route in the order the resolver tries them."""
    return index_text(in_resolution_order(app.registered_routes()))


# Powertools validates a request (path, query, body) before any middleware or route runs, and a route reads
# the caller's membership inside its unit of work: left as it is, a non-member would learn our field rules
# from a 400. So every refusal of a request to an organization's route, except the gates' own 401 and 403,
# first checks that the caller is a member (api.http.outsider_refusal): an outsider gets 403 NOT_A_MEMBER
# whatever was wrong with the request. Only refusals pay for the extra read; an accepted request's route
# reads the membership once, as before.
@app.exception_handler(AppError)
def handle_app_error(error: AppError) -> Response:
    if error.status not in (401, 403) and (refused := outsider_refusal(app)) is not None:
        return refused
    return error_response(error)


@app.exception_handler(RequestValidationError)
def handle_validation_error(error: RequestValidationError) -> Response:
    if (refused := outsider_refusal(app)) is not None:
        return refused
    details = [
        {"location": [str(part) for part in e.get("loc", ())], "message": str(e.get("msg", "")), "type": e.get("type")}
        for e in error.errors()
    ]
    if any(d["type"] == "json_invalid" for d in details):
        return json_response(400, {"error": {"code": "MALFORMED_JSON", "message": "The body is not valid JSON."}})
    return json_response(
        400, {"error": {"code": "VALIDATION_FAILED", "message": "The request is not valid.", "details": details}}
    )


@app.exception_handler(ResponseValidationError)
def handle_response_validation_error(error: ResponseValidationError) -> Response:
    logger.error("response broke its schema", extra={"errors": str(error.errors())[:2000]})
    return json_response(500, {"error": {"code": "INTERNAL_ERROR", "message": "Something went wrong on our side."}})


@app.not_found
def handle_not_found(error: NotFoundError) -> Response:
    return json_response(404, {"error": {"code": "ROUTE_NOT_FOUND", "message": "No such route."}})


@app.exception_handler(Exception)
def handle_unexpected(error: Exception) -> Response:
    logger.exception("unhandled error")
    return json_response(500, {"error": {"code": "INTERNAL_ERROR", "message": "Something went wrong on our side."}})


@instrumented(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return logged(app, event, lambda: _answer(event, context))


def _answer(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refused = _refused_before_resolving(event)
    if refused is not None:
        status, body = refused
        return {
            "statusCode": status,
            "headers": {"Content-Type": "application/json"},
            "body": json.dumps(body),
            "isBase64Encoded": False,
        }
    return app.resolve(event, context)
