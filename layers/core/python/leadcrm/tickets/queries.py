"""Ticket reads for the API: keyset lists, and a ticket's history, mails and messages."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, select

from leadcrm.platform.assignee import Assignee
from leadcrm.tickets.rules.states import TicketStatus
from leadcrm.tickets.tables import ticket_events, ticket_mails, ticket_messages, tickets


@dataclass(frozen=True)
class TicketFilters:
    status: TicketStatus | None = None
    queue_id: uuid.UUID | None = None
    assignee: Assignee | None = None
    lead_id: uuid.UUID | None = None
    membership_id: uuid.UUID | None = None


def list_tickets(
    conn: Connection, organization_id: uuid.UUID, filters: TicketFilters, *, after: uuid.UUID | None, limit: int
) -> tuple[list[dict[str, Any]], uuid.UUID | None]:
    """One page, newest first (keyset on the time-ordered id), and the id to continue after."""
    conditions: list[Any] = [tickets.c.organization_id == organization_id]
    if filters.status is not None:
        conditions.append(tickets.c.status == filters.status.value)
    if filters.queue_id is not None:
        conditions.append(tickets.c.queue_id == filters.queue_id)
    if filters.assignee is not None and filters.assignee.user_id is not None:
        conditions.append(tickets.c.assignee_user_id == filters.assignee.user_id)
    elif filters.assignee is not None:
        # Nobody responsible: no agent and no queue either (a queued ticket is its queue's to take).
        conditions.append(and_(tickets.c.assignee_user_id.is_(None), tickets.c.queue_id.is_(None)))
    if filters.lead_id is not None:
        conditions.append(tickets.c.lead_id == filters.lead_id)
    if filters.membership_id is not None:
        conditions.append(tickets.c.membership_id == filters.membership_id)
    if after is not None:
        conditions.append(tickets.c.id < after)
    rows = [
        dict(r)
        for r in conn.execute(
            select(tickets).where(*conditions).order_by(tickets.c.id.desc()).limit(limit + 1)
        ).mappings()
    ]
    page = rows[:limit]
    return page, (page[-1]["id"] if len(rows) > limit else None)


def history(conn: Connection, organization_id: uuid.UUID, ticket_id: uuid.UUID) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in conn.execute(
            select(ticket_events)
            .where(ticket_events.c.organization_id == organization_id, ticket_events.c.ticket_id == ticket_id)
            .order_by(ticket_events.c.occurred_at, ticket_events.c.id)
        ).mappings()
    ]


def mails(conn: Connection, organization_id: uuid.UUID, ticket_id: uuid.UUID) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in conn.execute(
            select(ticket_mails)
            .where(ticket_mails.c.organization_id == organization_id, ticket_mails.c.ticket_id == ticket_id)
            .order_by(ticket_mails.c.created_at, ticket_mails.c.id)
        ).mappings()
    ]


def messages(conn: Connection, organization_id: uuid.UUID, ticket_id: uuid.UUID) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in conn.execute(
            select(ticket_messages)
            .where(ticket_messages.c.organization_id == organization_id, ticket_messages.c.ticket_id == ticket_id)
            .order_by(ticket_messages.c.occurred_at, ticket_messages.c.id)
        ).mappings()
    ]
