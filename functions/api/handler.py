"""API function: API Gateway HTTP API (payload v2) events in, our JSON out.

Routes live in one Router per area; this module wires them, maps every error onto the one error shape,
and serves the OpenAPI document.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError, ResponseValidationError
from aws_lambda_powertools.utilities.typing import LambdaContext

from api.http import error_response, json_response
from api.routers import (
    analytics,
    attribution,
    bulk_email,
    campaigns,
    capture,
    consent,
    conversations,
    conversion,
    deals,
    erase,
    follow_ups,
    handovers,
    integrations,
    lead_imports,
    lead_moves,
    lead_reads,
    leads,
    merges,
    pipelines,
    qualification,
    queue,
    returning,
    tags,
    tasks,
    tickets,
    urgent_prompt,
)
from leadcrm.errors import AppError

logger = Logger(service="leadcrm")
# A response that breaks its own schema is our bug: a 500, never blamed on the request.
app = APIGatewayHttpResolver(enable_validation=True, response_validation_error_http_code=500)
# Literal paths (…/leads/campaigns, …/leads/bulk-move-stage) are registered before …/leads/<leadId>.
for area in (
    campaigns,
    tags,
    queue,
    erase,
    follow_ups,
    lead_moves,
    conversion,
    returning,
    capture,
    pipelines,
    tasks,
    urgent_prompt,
    integrations,
    lead_imports,
    conversations,
    consent,
    bulk_email,
    analytics,
    attribution,
    qualification,
    merges,
    deals,
    handovers,
    tickets,
    leads,
    lead_reads,
):
    app.include_router(area.router)

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def require_object_body(app: APIGatewayHttpResolver, next_middleware: NextMiddleware) -> Response:
    """Every body we accept is a JSON object. The resolver would otherwise take the first element of an
    array as the body (a silent partial create), so anything else is refused before validation."""
    event = app.current_event
    if event.http_method in BODY_METHODS and event.body and "json" in (event.headers.get("content-type") or "json"):
        try:
            body = event.json_body
        except ValueError:
            body = None  # malformed JSON: the validator answers MALFORMED_JSON
        else:
            if not isinstance(body, dict):
                return json_response(
                    400, {"error": {"code": "VALIDATION_FAILED", "message": "The body must be a JSON object."}}
                )
    return next_middleware(app)


app.use(middlewares=[require_object_body])


@cache
def openapi_schema() -> dict[str, Any]:
    """The OpenAPI document, built once per container from the routes' types."""
    return json.loads(app.get_openapi_json_schema(title="LeadCRM API", version="0.1.0"))


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[dict[str, Any]]:
    return json_response(200, openapi_schema())


@app.exception_handler(AppError)
def handle_app_error(error: AppError) -> Response:
    return error_response(error)


@app.exception_handler(RequestValidationError)
def handle_validation_error(error: RequestValidationError) -> Response:
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


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
