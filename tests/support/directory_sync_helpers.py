"""Platform directory events (organization.*, user.*, membership.*) as the platform sends them, delivered
through `leadcrm.wiring.handle_event` in a transaction of their own (as task_lifecycle does per record), and
reads of what the directory then holds."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from leadcrm.directory.access import resolve_actor
from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import directory_held_events, memberships, organizations, users
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.errors import Forbidden
from leadcrm.platform.ids import uuid7
from leadcrm.wiring import handle_event
from tests.support.events import eventbridge_envelope, lambda_context, sqs_event, sqs_record

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def at(minutes: float) -> str:
    """An updatedAt `minutes` after T0, as the platform spells it."""
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def organization_detail(
    organization_id: uuid.UUID,
    minutes: float = 0,
    *,
    name: str = "Studio Aviv",
    timezone: str = "Asia/Jerusalem",
    country: str | None = "IL",
    locale: str | None = "he",
    features: Iterable[str] = ("lead_management",),
) -> dict[str, Any]:
    return {
        "organizationId": str(organization_id),
        "name": name,
        "timezone": timezone,
        "country": country,
        "locale": locale,
        "features": list(features),
        "updatedAt": at(minutes),
    }


def user_detail(
    user_id: uuid.UUID,
    minutes: float = 0,
    *,
    subject: str | None = None,
    email: str | None = None,
    first_name: str | None = "Dana",
    last_name: str | None = "Cohen",
) -> dict[str, Any]:
    return {
        "userId": str(user_id),
        "authSubject": subject,
        "email": email,
        "firstName": first_name,
        "lastName": last_name,
        "updatedAt": at(minutes),
    }


def membership_detail(
    membership_id: uuid.UUID,
    organization_id: uuid.UUID,
    user_id: uuid.UUID,
    minutes: float = 0,
    *,
    role: str = "coach",
    status: str = "active",
) -> dict[str, Any]:
    return {
        "membershipId": str(membership_id),
        "organizationId": str(organization_id),
        "userId": str(user_id),
        "role": role,
        "status": status,
        "updatedAt": at(minutes),
    }


def membership_deletion(membership_id: uuid.UUID, organization_id: uuid.UUID, minutes: float) -> dict[str, Any]:
    return {"membershipId": str(membership_id), "organizationId": str(organization_id), "deletedAt": at(minutes)}


def deliver(detail_type: str, detail: dict[str, Any]) -> bool:
    """One delivery: the reaction's answer (True: the directory changed or held the event). An event that can
    never apply raises leadcrm.platform.failures.Rejected (`consume` shows what the consumer then does)."""
    with get_engine().begin() as conn:
        return handle_event(conn, detail_type, detail)


def consume(detail_type: str, detail: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One delivery through the task_lifecycle function, as an SQS record of the bus's event: its message id
    and the function's answer (`batchItemFailures` names what SQS will deliver again)."""
    from task_lifecycle.handler import lambda_handler

    queue = "leadcrm-task-lifecycle"
    record = sqs_record(eventbridge_envelope(detail_type, detail, source="platform"), queue_name=queue)
    answer = lambda_handler(sqs_event(record), lambda_context(queue))
    return record["messageId"], answer


def new_ids() -> tuple[uuid.UUID, uuid.UUID, uuid.UUID]:
    """An organization, a user and a membership id nobody has used (platform ids are ours)."""
    return uuid7(), uuid7(), uuid7()


def subject() -> str:
    return f"user_{uuid.uuid4().hex}"


def email() -> str:
    return f"dana.{uuid.uuid4().hex[:10]}@example.test"


def organization_row(organization_id: uuid.UUID) -> dict[str, Any] | None:
    return _row(organizations, organization_id)


def user_row(user_id: uuid.UUID) -> dict[str, Any] | None:
    return _row(users, user_id)


def membership_row(membership_id: uuid.UUID) -> dict[str, Any] | None:
    return _row(memberships, membership_id)


def _row(table: Any, row_id: uuid.UUID) -> dict[str, Any] | None:
    with get_engine().connect() as conn:
        row = conn.execute(select(table).where(table.c.id == row_id)).mappings().first()
    return dict(row) if row is not None else None


def held_of(subject_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(directory_held_events).where(directory_held_events.c.subject_id == subject_id))
        return [dict(r) for r in rows.mappings()]


def directory_of(
    organization_ids: Iterable[uuid.UUID], user_ids: Iterable[uuid.UUID], membership_ids: Iterable[uuid.UUID]
) -> dict[str, Any]:
    """What the directory holds for these ids, without the times of our own writes (created/updated_at)."""

    def rows(table: Any, ids: Iterable[uuid.UUID]) -> list[dict[str, Any]]:
        with get_engine().connect() as conn:
            found = conn.execute(select(table).where(table.c.id.in_(list(ids))).order_by(table.c.id)).mappings()
            return [{k: v for k, v in r.items() if k not in ("created_at", "updated_at")} for r in found]

    every_id = [*organization_ids, *user_ids, *membership_ids]
    with get_engine().connect() as conn:
        held = conn.execute(
            select(directory_held_events)
            .where(directory_held_events.c.subject_id.in_(every_id))
            .order_by(directory_held_events.c.kind, directory_held_events.c.subject_id)
        ).mappings()
        held_rows = [{k: v for k, v in r.items() if k not in ("created_at", "updated_at")} for r in held]
    return {
        "organizations": rows(organizations, organization_ids),
        "users": rows(users, user_ids),
        "memberships": rows(memberships, membership_ids),
        "held": held_rows,
    }


def access(auth_subject: str, organization_id: uuid.UUID) -> Actor | str:
    """The caller's actor on their next request, or the code of the 403 they get."""
    with get_engine().connect() as conn:
        try:
            return resolve_actor(conn, auth_subject, organization_id)
        except Forbidden as refused:
            return refused.code
