"""Helpers for the conversion, identity and platform-event tests: people with names and phones, leads
written straight into the database (how they were made is tested elsewhere), and reading results back."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update

from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.leads.tables import lead_tag_assignments, lead_tags, leads
from leadcrm.pipelines.stages import default_new_stage
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.platform.tables import outbox
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.events import eventbridge_envelope, sqs_event, sqs_record
from tests.support.factories import StaffCaller, make_membership


@dataclass(frozen=True)
class Person:
    user_id: uuid.UUID
    membership_id: uuid.UUID | None


def unique_email(label: str = "person") -> str:
    """Users are global (not per organization) and the database lives for the session: every test's
    emails must be its own."""
    return f"{label}-{uuid.uuid4().hex[:12]}@example.com"


def set_country(org_id: uuid.UUID, country_code: str | None) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == org_id).values(country_code=country_code))


def make_person(
    org_id: uuid.UUID | None,
    *,
    first_name: str | None = None,
    last_name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    kind: str = "account",
    role: str = "member",
    status: str = "active",
    deleted: bool = False,
) -> Person:
    """A platform user (an account unless `kind` says managed) with a membership in `org_id` (none if None).

    An account gets a unique email unless one is given; pass `email=""` for a user without one."""
    user_id = uuid7()
    if email is None:
        email = f"person-{user_id.hex[-12:]}@example.test" if kind == "account" else None
    with get_engine().begin() as conn:
        conn.execute(
            insert(users).values(
                id=user_id,
                auth_subject=None,
                email=email or None,
                first_name=first_name,
                last_name=last_name,
                phone=phone,
                kind=kind,
            )
        )
    membership_id = None
    if org_id is not None:
        membership_id = make_membership(org_id, user_id, role=role, status=status, deleted=deleted).id
    return Person(user_id=user_id, membership_id=membership_id)


def insert_lead(
    org_id: uuid.UUID,
    *,
    name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    created_at: Any = None,
) -> uuid.UUID:
    """A lead on the organization's default pipeline's New stage, with exactly these contact fields."""
    lead_id = uuid7()
    with get_engine().begin() as conn:
        placement = default_new_stage(conn, org_id)
        values: dict[str, Any] = {
            "id": lead_id,
            "organization_id": org_id,
            "name": name,
            "email": email,
            "phone": phone,
            "status": placement.category.value,
            "pipeline_id": placement.pipeline_id,
            "stage_id": placement.stage_id,
        }
        if created_at is not None:
            values["created_at"] = created_at
        conn.execute(insert(leads).values(**values))
    return lead_id


def convert(caller: StaffCaller, lead_id: Any, body: Any) -> ApiResponse:
    return call_api("POST", f"{leads_path(caller.org_id, lead_id)}/convert", sub=caller.sub, body=body)


def link_member(caller: StaffCaller, lead_id: Any, membership_id: Any) -> ApiResponse:
    return call_api(
        "POST",
        f"{leads_path(caller.org_id, lead_id)}/link-member",
        sub=caller.sub,
        body={"membershipId": str(membership_id)},
    )


def candidates(caller: StaffCaller, lead_id: Any, search: str | None = None, *, workspace: bool = False) -> ApiResponse:
    base = (
        f"/organizations/{caller.org_id}/sales-workspace/leads/{lead_id}"
        if workspace
        else leads_path(caller.org_id, lead_id)
    )
    return call_api("GET", f"{base}/link-candidates", sub=caller.sub, query={"search": search} if search else None)


def memberships_of_lead_source(lead_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(memberships).where(memberships.c.source_lead_id == uuid.UUID(str(lead_id))))
        return [dict(r) for r in rows.mappings()]


def membership_row(membership_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(
            conn.execute(select(memberships).where(memberships.c.id == uuid.UUID(str(membership_id)))).mappings().one()
        )


def account_users_with_email(email: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(users).where(func.lower(users.c.email) == email.lower(), users.c.kind == "account")
        ).mappings()
        return [dict(r) for r in rows]


def outbox_of_type(org_id: uuid.UUID, event_type: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(outbox)
            .where(outbox.c.organization_id == org_id, outbox.c.type == event_type)
            .order_by(outbox.c.occurred_at)
        ).mappings()
        return [dict(r) for r in rows]


def lead_tag_names(lead_id: Any) -> list[tuple[str, str]]:
    """(category, name) of the lead's tags."""
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_tags.c.category, lead_tags.c.name)
            .join(lead_tag_assignments, lead_tag_assignments.c.tag_id == lead_tags.c.id)
            .where(lead_tag_assignments.c.lead_id == uuid.UUID(str(lead_id)))
            .order_by(lead_tags.c.name)
        ).all()
    return [(r.category, r.name) for r in rows]


def deliver_platform_event(task_lifecycle: Any, detail_type: str, detail: dict[str, Any]) -> dict[str, Any]:
    """One platform event as task_lifecycle receives it: an SQS record whose body is the EventBridge event
    with the platform's own detail (no outbox wrapper)."""
    envelope = eventbridge_envelope(detail_type, detail, source="platform.local")
    return task_lifecycle(sqs_event(sqs_record(envelope, queue_name="leadcrm-task-lifecycle")))
