"""What the requester does with a ticket: reply, confirm a resolution, reopen it. Under the ticket's row lock and
through the SLA triggers (tickets.tickets)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import update

from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest
from leadcrm.tickets.rules.mail import MailKind
from leadcrm.tickets.rules.states import (
    InvalidTransition,
    TicketStatus,
    Trigger,
)
from leadcrm.tickets.staff_actions import log_message
from leadcrm.tickets.tables import (
    tickets,
)
from leadcrm.tickets.tickets import apply_trigger, lock_ticket, now_or_clock, queue_mails, read_ticket, record_events


def customer_reply(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    ticket_id: uuid.UUID,
    *,
    message: str,
    actor_user_id: uuid.UUID | None,
    now: datetime | None = None,
    channel: str | None = None,
    **email: Any,
) -> dict[str, Any]:
    """The customer wrote. Awaiting Customer → In Progress (the clock resumes); in other open states the
    message is logged and nothing moves. A resolved ticket is confirmed or reopened instead (409 here), a
    closed one takes nothing."""
    conn = uow.connection
    now = now_or_clock(now)
    ticket = lock_ticket(conn, organization_id, ticket_id)
    status = TicketStatus(ticket["status"])
    if status in (TicketStatus.RESOLVED, TicketStatus.CLOSED):
        raise InvalidTransition(status, Trigger.CUSTOMER_REPLY)
    log_message(conn, ticket, direction="inbound", body=message, now=now, channel=channel, **email)
    if status is TicketStatus.AWAITING_CUSTOMER:
        return apply_trigger(uow, ticket, Trigger.CUSTOMER_REPLY, actor_user_id=actor_user_id, now=now)
    record_events(
        conn,
        [
            {
                "organization_id": organization_id,
                "ticket_id": ticket_id,
                "type": "customer_message",
                "actor_user_id": actor_user_id,
                "occurred_at": now,
                "payload": {},
            }
        ],
    )
    conn.execute(update(tickets).where(tickets.c.id == ticket_id).values(updated_at=now))
    return read_ticket(conn, organization_id, ticket_id)

def confirm(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    ticket_id: uuid.UUID,
    *,
    actor_user_id: uuid.UUID | None,
    now: datetime | None = None,
    ticket: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Resolved → Closed: the customer confirmed. The clock stops; the satisfaction survey goes out."""
    now = now_or_clock(now)
    ticket = ticket or lock_ticket(uow.connection, organization_id, ticket_id)
    written = apply_trigger(
        uow,
        ticket,
        Trigger.CONFIRM,
        actor_user_id=actor_user_id,
        now=now,
        values={"closed_at": now, "close_reason": "confirmed"},
    )
    queue_mails(uow.connection, [written], MailKind.SATISFACTION_SURVEY, now)
    return written

def reopen(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    ticket_id: uuid.UUID,
    *,
    reason: str,
    actor_user_id: uuid.UUID | None,
    now: datetime | None = None,
    ticket: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Resolved → Reopened: the issue persists. The reason is kept; the resolution clock restarts from now."""
    if not reason.strip():
        raise BadRequest("Say why the ticket is reopened.", code="TICKET_REOPEN_REASON_REQUIRED")
    now = now_or_clock(now)
    ticket = ticket or lock_ticket(uow.connection, organization_id, ticket_id)
    return apply_trigger(
        uow,
        ticket,
        Trigger.REOPEN,
        actor_user_id=actor_user_id,
        now=now,
        values={"reopen_reason": reason},
        payload={"reason": reason},
    )
