"""Runs a create behind an optional Idempotency-Key, in the caller's unit of work."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from aws_lambda_powertools.event_handler import Response
from pydantic import BaseModel

from api.http import json_response
from leadcrm.platform import idempotency
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict

REPLAYED_HEADER = {"Idempotent-Replayed": "true"}

Body = TypeVar("Body", bound=BaseModel)


def respond_once(
    uow: UnitOfWork,
    scope: str,
    key: str | None,
    request: BaseModel,
    status: int | Callable[[Body], int],
    produce: Callable[[], Body],
) -> Response:
    """Commit `produce()`'s work and answer it; with a key seen before, answer what the first request got.

    `status` may depend on what was produced (a staff create that reopened a closed lead answers 200, not
    201); the replay answers the status the first request got. The key is claimed and its answer stored in
    the same transaction as the work, so a replay can never see a half-done create, and a create that rolls
    back leaves the key free.
    """
    if key is None:
        produced = produce()
        uow.commit()
        return json_response(_status_of(status, produced), produced)
    fingerprint = idempotency.request_fingerprint(request.model_dump(mode="json"))
    replay = idempotency.claim(uow.connection, scope, key, fingerprint)
    if replay is not None:
        return json_response(replay.status, replay.body, REPLAYED_HEADER)
    produced = produce()
    answer_status = _status_of(status, produced)
    body = produced.model_dump(mode="json", by_alias=True)
    idempotency.remember(uow.connection, scope, key, idempotency.StoredResponse(answer_status, body))
    uow.commit()
    return json_response(answer_status, body)


def _status_of(status: int | Callable[[Body], int], produced: Body) -> int:
    return status if isinstance(status, int) else status(produced)


def claim_send(uow: UnitOfWork, scope: str, key: str | None, request: dict[str, object]) -> Response | None:
    """For a send committed in two transactions (queued, then its outcome): claim `key` with the queued
    message, or answer what the first request with that key got. The key's answer is stored with the
    outcome, so between the two a retry is 409 SEND_IN_PROGRESS, never a second send. None: go on."""
    if key is None:
        return None
    replay = idempotency.claim(uow.connection, scope, key, idempotency.request_fingerprint(request))
    if replay is None:
        return None
    if replay.status == 0:  # claimed with its message, outcome not recorded (yet)
        raise Conflict("A send with this Idempotency-Key is in progress.", code="SEND_IN_PROGRESS")
    return json_response(replay.status, replay.body, REPLAYED_HEADER)
