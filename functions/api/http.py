"""What every route needs: the caller's JWT subject, JSON responses in our envelope, path ids."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from pydantic import BaseModel

from leadcrm.directory.access import resolve_actor
from leadcrm.directory.rules import Actor
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError, Forbidden, NotFound, Unauthenticated
from leadcrm.platform.ids import parse_uuid

logger = Logger(service="leadcrm")
INTERNAL_ERROR = {"error": {"code": "INTERNAL_ERROR", "message": "Something went wrong on our side."}}


def auth_subject(app: APIGatewayHttpResolver) -> str:
    """The JWT `sub` the API Gateway authorizer verified; the route is unreachable without one in AWS."""
    subject = app.current_event.request_context.authorizer.jwt_claim.get("sub")
    if not subject:
        raise Unauthenticated("A valid bearer token is required.")
    return str(subject)


def caller(uow: UnitOfWork, router: Any, org_id: str) -> Actor:
    """The caller's active membership in the path's organization, read now; the route applies its gate."""
    return resolve_actor(uow.connection, auth_subject(router), organization_id(org_id))


@contextmanager
def gate_before_rules(uow: UnitOfWork, router: Any, org_id: str, gate: Callable[[Actor], Actor]) -> Iterator[None]:
    """Around the request's own rules on a route whose membership check rides in its read
    (leadcrm.directory.member_reads): a rule refused before that read ran answers only once the caller passed
    the gate, so a member below the route's role gets the gate's 403, not the rule's 400 or 404, as when the
    membership was read first. Only a refused request pays for that extra read."""
    try:
        yield
    except AppError as refused:
        if refused.status not in (401, 403):
            gate(caller(uow, router, org_id))
        raise


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


ORGANIZATION_PATH_PREFIX = "/organizations/"


def outsider_refusal(app: APIGatewayHttpResolver) -> Response | None:
    """The 401 or 403 a caller who is not an active member of the path's organization gets, or None.

    Asked before any other refusal of a request to an organization's route is answered (api.handler): the
    resolver validated the request before the route could read the membership, and an outsider must learn
    nothing from the answer, neither our field rules nor whether an id exists."""
    path = app.current_event.path
    if not path.startswith(ORGANIZATION_PATH_PREFIX):
        return None
    org_id = path[len(ORGANIZATION_PATH_PREFIX) :].split("/", 1)[0]
    try:
        with UnitOfWork() as uow:
            caller(uow, app, org_id)
    except (Unauthenticated, Forbidden) as refused:
        return error_response(refused)
    except Exception:  # the membership cannot be read (database down): say nothing of the request either
        logger.exception("membership check before a refusal failed")
        return json_response(500, INTERNAL_ERROR)
    return None
