"""How every route documents itself: the OpenAPI operation, written once per route through Powertools' own
route arguments (`operation_id`, `summary`, `description`, `responses`, `tags`, `security`).

A route names what only it knows: its operationId, summary, the rule a caller meets, who may call it (`who`)
and the domain error codes it raises (`errors`). What follows from the route's method, path and signature is
added here, so that no route can forget it and no two routes say it differently:
- every organization route needs the bearer token (401 UNAUTHENTICATED) and a membership of the path's
  organization with the lead_management feature (403 NOT_A_MEMBER, FEATURE_DISABLED), plus the role `who`
  asks for (403 STAFF_ONLY, OWNER_OR_ADMIN_ONLY); the public routes need no token (`security: []`);
- a route that takes a body may answer 400 MALFORMED_JSON, 413 BODY_TOO_LARGE and 415 UNSUPPORTED_MEDIA_TYPE
  (api.handler refuses those before the route runs), and 400 VALIDATION_FAILED like any route with a query,
  header or typed path parameter;
- an `Idempotency-Key` header makes the route replay its first answer (400 INVALID_IDEMPOTENCY_KEY,
  422 IDEMPOTENCY_KEY_REUSED); a `cursor` query parameter may be 400 INVALID_CURSOR;
- any route may fail on our side: 500 INTERNAL_ERROR.
Each error response lists its codes in its description and in `x-error-codes`, with the one Error schema.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.schemas import Error, Unauthorized

F = TypeVar("F", bound=Callable[..., Any])

BEARER = "bearerAuth"
ORGANIZATION_PREFIX = "/organizations/"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

# Who may call a route (the role gate it applies after the membership check).
PUBLIC = "Anyone, without a token."
MEMBER = "Any active member of the organization."
STAFF = "Staff of the organization (owner, admin or coach)."
MANAGER = "An owner or admin of the organization."
_ROLE_CODES = {STAFF: ("STAFF_ONLY",), MANAGER: ("OWNER_OR_ADMIN_ONLY",), MEMBER: (), PUBLIC: ()}

STATUS_TEXT = {
    400: "Bad input",
    401: "No valid bearer token (API Gateway answers {\"message\": \"Unauthorized\"} itself; codes are ours)",
    403: "Refused to this caller",
    404: "No such entity in this organization",
    409: "Conflicts with the current state",
    413: "The body is larger than the route takes (1 MiB; 64 KiB on the public routes)",
    415: "The body is not JSON (Content-Type)",
    422: "Refused as it stands",
    429: "Too many requests: retry after the Retry-After header's seconds",
    500: "Our failure",
    503: "Not configured on this deployment",
}


def _annotations(func: Callable[..., Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(func, include_extras=True)
    return {name: hints.get(name) for name in inspect.signature(func).parameters}


def _markers(annotation: Any) -> list[Any]:
    return list(typing.get_args(annotation)[1:]) if typing.get_origin(annotation) is typing.Annotated else []


def _framework_errors(method: str, rule: str, func: Callable[..., Any], who: str) -> dict[int, list[str]]:
    """The refusals that follow from the route's method, path, role gate and signature (see the module doc)."""
    errors: dict[int, list[str]] = {500: ["INTERNAL_ERROR"]}
    if rule.startswith(ORGANIZATION_PREFIX):
        errors[401] = ["UNAUTHENTICATED"]
        errors[403] = ["NOT_A_MEMBER", "FEATURE_DISABLED", *_ROLE_CODES[who]]
    path_names = {part[1:-1] for part in rule.split("/") if part.startswith("<")}
    validated = method in BODY_METHODS
    for name, annotation in _annotations(func).items():
        markers = _markers(annotation)
        if name == "return":
            continue
        if name in path_names and (annotation is str or any(isinstance(m, Path) for m in markers)):
            continue  # a plain text path id: an unknown one is a 404, never a 400
        validated = True
        if any(isinstance(m, Header) and (m.alias or "").lower() == "idempotency-key" for m in markers):
            errors.setdefault(400, []).append("INVALID_IDEMPOTENCY_KEY")
            errors.setdefault(422, []).append("IDEMPOTENCY_KEY_REUSED")
        if any(isinstance(m, Header) and (m.alias or "").lower() == "if-match" for m in markers):
            # a versioned lead write (api.lead_versions): a stale version answers the lead as it is now
            errors.setdefault(400, []).extend(["INVALID_IF_MATCH", "LEAD_VERSION_AMBIGUOUS"])
            errors.setdefault(409, []).append("LEAD_VERSION_CONFLICT")
        if name == "cursor" or any(isinstance(m, Query) and m.alias == "cursor" for m in markers):
            errors.setdefault(400, []).append("INVALID_CURSOR")
    if validated:
        errors.setdefault(400, []).insert(0, "VALIDATION_FAILED")
    if method in BODY_METHODS:
        errors[400].insert(0, "MALFORMED_JSON")
        errors[413] = ["BODY_TOO_LARGE"]
        errors[415] = ["UNSUPPORTED_MEDIA_TYPE"]
    return errors


def _takes_idempotency_key(func: Callable[..., Any]) -> bool:
    return any(
        isinstance(m, Header) and (m.alias or "").lower() == "idempotency-key"
        for annotation in _annotations(func).values()
        for m in _markers(annotation)
    )


def _takes_if_match(func: Callable[..., Any]) -> bool:
    return any(
        isinstance(m, Header) and (m.alias or "").lower() == "if-match"
        for annotation in _annotations(func).values()
        for m in _markers(annotation)
    )


def _merge(*sources: Mapping[int, Sequence[str]]) -> dict[int, list[str]]:
    merged: dict[int, list[str]] = {}
    for source in sources:
        for status, codes in source.items():
            merged.setdefault(status, [])
            merged[status] += [code for code in codes if code not in merged[status]]
    return dict(sorted(merged.items()))


def _is_page(response: OpenAPIResponse) -> bool:
    return "text/html" in (response.get("content") or {})


def _error_response(status: int, codes: list[str], declared: OpenAPIResponse | None) -> OpenAPIResponse:
    """One error status: its codes in the description and in `x-error-codes`, with the Error schema (a route
    that answers a page for people, the unsubscribe link, keeps its own content)."""
    detail = (declared or {}).get("description")
    text = STATUS_TEXT.get(status, HTTPStatus(status).phrase)
    if detail and detail not in codes:
        text = f"{text}: {detail}"
    # A 401 is mostly API Gateway's own `{"message": "Unauthorized"}` (its JWT authorizer refuses before the
    # API runs), else ours (a token without the claims the API needs).
    model = Unauthorized if status == 401 else Error
    content = (declared or {}).get("content") or {"application/json": {"model": model}}
    response: dict[str, Any] = {
        "description": f"{text}. Codes: {', '.join(codes)}.",
        "content": content,
        "x-error-codes": codes,
    }
    return typing.cast(OpenAPIResponse, response)


# With validation on, Powertools documents a 422 HTTPValidationError on every operation; ours are 400
# VALIDATION_FAILED (api.handler), so an operation that never answers 422 says so, in our error shape.
NO_422 = typing.cast(
    OpenAPIResponse,
    {
        "description": "Not answered by this operation: a request that fails validation is a 400 VALIDATION_FAILED.",
        "content": {"application/json": {"model": Error}},
        "x-error-codes": [],
    },
)


class Operations:
    """A router's routes, each documented as one OpenAPI operation under the capability's tag."""

    def __init__(self, router: APIGatewayHttpRouter, tag: str) -> None:
        self.router = router
        self.tag = tag

    def get(self, rule: str, operation_id: str, summary: str, description: str, **more: Any) -> Callable[[F], F]:
        return self._route("GET", rule, operation_id, summary, description, **more)

    def post(self, rule: str, operation_id: str, summary: str, description: str, **more: Any) -> Callable[[F], F]:
        return self._route("POST", rule, operation_id, summary, description, **more)

    def put(self, rule: str, operation_id: str, summary: str, description: str, **more: Any) -> Callable[[F], F]:
        return self._route("PUT", rule, operation_id, summary, description, **more)

    def patch(self, rule: str, operation_id: str, summary: str, description: str, **more: Any) -> Callable[[F], F]:
        return self._route("PATCH", rule, operation_id, summary, description, **more)

    def delete(self, rule: str, operation_id: str, summary: str, description: str, **more: Any) -> Callable[[F], F]:
        return self._route("DELETE", rule, operation_id, summary, description, **more)

    def _route(
        self,
        method: str,
        rule: str,
        operation_id: str,
        summary: str,
        description: str,
        *,
        who: str | None = None,
        errors: Mapping[int, Sequence[str]] | None = None,
        ok: Mapping[int, OpenAPIResponse] | None = None,
        **route_options: Any,
    ) -> Callable[[F], F]:
        public = not rule.startswith(ORGANIZATION_PREFIX)
        gate = who or (PUBLIC if public else STAFF)

        def register(func: F) -> F:
            declared = dict(ok or {})
            codes = _merge(_framework_errors(method, rule, func, gate), errors or {})
            # a route's own 2xx, and the error pages it answers people with (no JSON, so no code)
            responses: dict[int, OpenAPIResponse] = {
                s: r for s, r in declared.items() if s < 400 or (s not in codes and _is_page(r))
            }
            responses.update({s: _error_response(s, c, declared.get(s)) for s, c in codes.items()})
            if 204 in responses:  # no body at all: Powertools would describe the return type's None
                responses[204] = typing.cast(OpenAPIResponse, {**responses[204], "content": {}})
            if not any(200 <= s < 300 for s in responses):
                # what Powertools documents when a route names no responses: its status, the return type's schema
                responses[route_options.get("status_code", 200)] = {"description": "Successful Response"}
            if 422 not in responses:
                responses[422] = NO_422
            lines = [description.strip(), f"**Who may call:** {gate}"]
            if _takes_idempotency_key(func):
                lines.append(
                    "**Idempotent:** send an `Idempotency-Key` header; a retry with the same key and body answers "
                    "the first answer (header `Idempotent-Replayed: true`), the same key with another body is a "
                    "422 IDEMPOTENCY_KEY_REUSED."
                )
            if _takes_if_match(func):
                lines.append(
                    "**Versioned:** send the version you read (`If-Match: \"<version>\"`, the lead's `ETag`, or "
                    "`version` in the body); a lead written since answers 409 LEAD_VERSION_CONFLICT with the lead as "
                    "it is now (`error.lead`). Without a version the write is not checked."
                )
            refusals = "; ".join(f"{s} {', '.join(c)}" for s, c in codes.items() if s != 500)
            lines.append(f"**Refusals:** {refusals}.")
            decorator = getattr(self.router, method.lower())(
                rule,
                operation_id=operation_id,
                summary=summary,
                description="\n\n".join(lines),
                tags=[self.tag],
                responses=responses,
                # An empty list is falsy to Powertools (it would drop it); the public routes override the
                # document's default bearer requirement with `security: []`, through the operation's fields.
                security=None if public else [{BEARER: []}],
                openapi_extensions={"security": []} if public else None,
                # documented by our own 500 (below), not Powertools' ResponseValidationError; the answer is the
                # same 500 INTERNAL_ERROR (api.handler.handle_response_validation_error)
                custom_response_validation_http_code=HTTPStatus.INTERNAL_SERVER_ERROR,
                **route_options,
            )
            return typing.cast(F, decorator(func))

        return register
