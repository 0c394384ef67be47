"""Helpdesk tickets in tests: API calls, service calls at chosen instants, and reads of what was written."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from leadcrm.directory.rules import Actor, Role, enabled_features
from leadcrm.directory.tables import organizations
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.tickets.tables import ticket_events, ticket_mails, ticket_surveys, tickets
from tests.support.api import ApiResponse, call_api
from tests.support.factories import LEAD_MANAGEMENT_ON, StaffCaller

WEEKDAYS_9_TO_5 = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}


def tickets_path(org_id: Any, ticket_id: Any | None = None, action: str | None = None) -> str:
    path = f"/organizations/{org_id}/tickets"
    if ticket_id is not None:
        path += f"/{ticket_id}"
    if action is not None:
        path += f"/{action}"
    return path


def open_ticket(caller: StaffCaller, body: dict[str, Any], **kwargs: Any) -> ApiResponse:
    return call_api("POST", tickets_path(caller.org_id), sub=caller.sub, body=body, **kwargs)


def ticket_action(caller: StaffCaller, ticket_id: Any, action: str, body: dict[str, Any] | None = None) -> ApiResponse:
    return call_api("POST", tickets_path(caller.org_id, ticket_id, action), sub=caller.sub, body=body or {})


def get_ticket(caller: StaffCaller, ticket_id: Any) -> ApiResponse:
    return call_api("GET", tickets_path(caller.org_id, ticket_id), sub=caller.sub)


def config_call(caller: StaffCaller, method: str, path: str, body: Any = None, **kwargs: Any) -> ApiResponse:
    return call_api(method, f"/organizations/{caller.org_id}/{path}", sub=caller.sub, body=body, **kwargs)


def actor_of(caller: StaffCaller) -> Actor:
    return Actor(
        user_id=caller.user.id,
        organization_id=caller.org_id,
        membership_id=caller.membership.id,
        role=Role(caller.membership.role),
        features=enabled_features(LEAD_MANAGEMENT_ON),
    )


def set_timezone(org_id: uuid.UUID, timezone: str) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == org_id).values(timezone=timezone))


def configure(org_id: uuid.UUID, **changes: Any) -> None:
    """Helpdesk settings through the service (business_hours, holidays, sla_policies, auto_close_hours, …)."""
    from leadcrm.tickets import config as ticket_config

    with UnitOfWork() as uow:
        ticket_config.update_settings(uow.connection, org_id, changes)
        uow.commit()


def in_uow(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Runs a service use case in its own committed unit of work."""
    with UnitOfWork(publisher=lambda events: None) as uow:
        result = function(uow, *args, **kwargs)
        uow.commit()
    return result


def new_ticket(org_id: uuid.UUID, at: datetime, **fields: Any) -> dict[str, Any]:
    from leadcrm.tickets import creation
    from leadcrm.tickets.rules.routing import Channel

    values = {"subject": "Cannot book a class", "description": "", "channel": Channel.PHONE, **fields}
    return in_uow(creation.create_ticket, org_id, creation.NewTicket(**values), now=at)


def ticket_row(ticket_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(tickets).where(tickets.c.id == uuid.UUID(str(ticket_id)))).mappings().one())


def set_ticket_columns(ticket_id: Any, **values: Any) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(tickets).where(tickets.c.id == uuid.UUID(str(ticket_id))).values(**values))


def ticket_history(ticket_id: Any, event_type: str | None = None) -> list[dict[str, Any]]:
    query = select(ticket_events).where(ticket_events.c.ticket_id == uuid.UUID(str(ticket_id)))
    if event_type is not None:
        query = query.where(ticket_events.c.type == event_type)
    with get_engine().connect() as conn:
        return [
            dict(r) for r in conn.execute(query.order_by(ticket_events.c.occurred_at, ticket_events.c.id)).mappings()
        ]


def ticket_mail_rows(ticket_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        return [
            dict(r)
            for r in conn.execute(
                select(ticket_mails)
                .where(ticket_mails.c.ticket_id == uuid.UUID(str(ticket_id)))
                .order_by(ticket_mails.c.created_at, ticket_mails.c.id)
            ).mappings()
        ]


def survey_row(ticket_id: Any) -> dict[str, Any] | None:
    with get_engine().connect() as conn:
        row = conn.execute(
            select(ticket_surveys).where(ticket_surveys.c.ticket_id == uuid.UUID(str(ticket_id)))
        ).first()
        return dict(row._mapping) if row else None


def ses_sent(region: str = "eu-west-1") -> list[Any]:
    from moto.ses.models import ses_backends

    return list(ses_backends["123456789012"][region].sent_messages)
