"""What every route needs: the caller's JWT subject, JSON responses in our envelope, path ids."""

from __future__ import annotations

import uuid
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from pydantic import BaseModel

from leadcrm.directory.access import resolve_actor
from leadcrm.directory.rules import Actor
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError, Forbidden, NotFound, Unauthenticated
from leadcrm.platform.ids import parse_uuid


def auth_subject(app: APIGatewayHttpResolver) -> str:
    """The JWT `sub` the API Gateway authorizer verified; the route is unreachable without one in AWS."""
    subject = app.current_event.request_context.authorizer.jwt_claim.get("sub")
    if not subject:
        raise Unauthenticated("A valid bearer token is required.")
    return str(subject)


def caller(uow: UnitOfWork, router: Any, org_id: str) -> Actor:
    """The caller's active membership in the path's organization, read now; the route applies its gate."""
    return resolve_actor(uow.connection, auth_subject(router), organization_id(org_id))


def organization_id(raw: str) -> uuid.UUID:
    """An organization id from the path; one that is not a UUID is refused like one you do not belong to."""
    parsed = parse_uuid(raw)
    if parsed is None:
        raise Forbidden("You are not a member of this organization.", code="NOT_A_MEMBER")
    return parsed


def entity_id(raw: str, not_found: str) -> uuid.UUID:
    parsed = parse_uuid(raw)
    if parsed is None:
        raise NotFound("Not found.", code=not_found)
    return parsed


def json_response(status: int, body: dict[str, Any] | BaseModel, headers: dict[str, str] | None = None) -> Response:
    """A JSON response; the resolver serializes the body (and validates it against the route's return type)."""
    payload = body.model_dump(mode="json", by_alias=True) if isinstance(body, BaseModel) else body
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=payload, headers=headers)


def error_response(error: AppError) -> Response:
    return json_response(error.status, error.body())
