"""The seam between inbound email (conversations / ingestion) and tickets.

Ingestion, for each recipient of an inbound message:

    organization_id = organization_for_support_address(conn, recipient)      # None: not a support address
    if organization_id is not None:
        outcome = open_or_update_ticket_from_email(uow, organization_id, sender_email, subject, text,
                                                   external_message_id, received_at, in_reply_to,
                                                   conversation_id=thread id or None)

`text` is the message's own words (ingestion strips quoted history with its reply parser). The call is
idempotent on `external_message_id` (the Message-ID): a redelivered message changes nothing and answers the
ticket it went to the first time (two deliveries racing: the second fails on the unique Message-ID and its
retry answers DUPLICATE).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, func, select

from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.tickets import config as ticket_config
from leadcrm.tickets import creation, requester_actions, staff_actions
from leadcrm.tickets import tickets as ticket_service
from leadcrm.tickets.rules.mail import (
    ReplyMeaning,
    message_id_key,
    parse_support_address,
    reopen_reason,
    reply_meaning,
    requester_address,
    subject_reference,
)
from leadcrm.tickets.rules.routing import Channel, Priority
from leadcrm.tickets.rules.states import TicketStatus
from leadcrm.tickets.tables import ticket_mails, ticket_messages, ticket_settings, tickets

MAX_SUBJECT = 500
NO_SUBJECT = "(no subject)"


class EmailOutcome(StrEnum):
    CREATED = "created"  # a new ticket
    FOLLOW_UP = "follow_up"  # a new ticket for a reply to a closed one (it points at the old one)
    RECORDED = "recorded"  # a message on an open ticket; nothing moved
    RESUMED = "resumed"  # Awaiting Customer → In Progress: the clock runs again
    CONFIRMED = "confirmed"  # Resolved → Closed
    REOPENED = "reopened"  # Resolved → Reopened, with the reply as the reason
    DUPLICATE = "duplicate"  # this Message-ID was handled before


@dataclass(frozen=True)
class EmailResult:
    outcome: EmailOutcome
    ticket_id: uuid.UUID


def organization_for_support_address(conn: Connection, address: str) -> uuid.UUID | None:
    """The organization a support address (``support+<token>@<inbound domain>``) belongs to, or None."""
    token = parse_support_address(address, ticket_config.inbound_domain())
    if token is None:
        return None
    return conn.execute(
        select(ticket_settings.c.organization_id).where(ticket_settings.c.support_token == token)
    ).scalar()


def _bare(message_id: str | None) -> str | None:
    if not message_id:
        return None
    return message_id.strip().strip("<>").strip() or None


def find_ticket_for_reply(
    conn: Connection, organization_id: uuid.UUID, sender_email: str | None, subject: str, in_reply_to: str | None
) -> uuid.UUID | None:
    """The ticket a reply belongs to: by In-Reply-To (a mail the ticket sent, or an earlier message of its
    thread), else by the subject's [#number] when the sender is the ticket's requester (a sender with no
    address is nobody's requester)."""
    bare = _bare(in_reply_to)
    if bare is not None:
        key = message_id_key(bare)
        # Never compare with None: `== None` is IS NULL in SQL and would match every unsent mail.
        by_mail = None
        if key is not None:
            by_mail = conn.execute(
                select(ticket_mails.c.ticket_id).where(
                    ticket_mails.c.organization_id == organization_id, ticket_mails.c.provider_message_id == key
                )
            ).scalar()
        if by_mail is not None:
            return by_mail
        by_message = conn.execute(
            select(ticket_messages.c.ticket_id).where(
                ticket_messages.c.organization_id == organization_id,
                ticket_messages.c.external_message_id.in_([bare, f"<{bare}>"]),
            )
        ).scalar()
        if by_message is not None:
            return by_message
    number = subject_reference(subject)
    if number is not None and sender_email is not None:
        return conn.execute(
            select(tickets.c.id).where(
                tickets.c.organization_id == organization_id,
                tickets.c.number == number,
                func.lower(tickets.c.requester_email) == sender_email.strip().lower(),
            )
        ).scalar()
    return None


def open_or_update_ticket_from_email(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    sender_email: str | None,
    subject: str,
    text: str,
    external_message_id: str,
    received_at: datetime,
    in_reply_to: str | None,
    *,
    conversation_id: uuid.UUID | None = None,
) -> EmailResult:
    """A new message to the organization's support address: a new ticket, or the next step of the ticket it
    answers. On a ticket awaiting the customer the clock resumes (§6 Awaiting Customer → In Progress); on a
    resolved ticket the reply confirms (→ Closed, survey) or says the issue persists (→ Reopened with the
    reply as its reason; `tickets.rules.mail.reply_meaning`); on a closed ticket a new ticket is opened that
    points at it. A sender that is no address once cleaned (or none at all) opens or moves its ticket all the
    same, with no requester address (tickets.rules.mail.requester_address). The caller commits."""
    conn = uow.connection
    sender_email = requester_address(sender_email)
    # Concurrent deliveries of one message (SES retries, SQS redelivery) queue here, so the later ones see the
    # first one's message and answer DUPLICATE instead of failing on the unique external id (and retrying).
    lock_key = func.hashtextextended(f"ticket-mail:{organization_id}:{external_message_id}", 0)
    conn.execute(select(func.pg_advisory_xact_lock(lock_key)))
    seen = conn.execute(
        select(ticket_messages.c.ticket_id).where(
            ticket_messages.c.organization_id == organization_id,
            ticket_messages.c.external_message_id == external_message_id,
        )
    ).scalar()
    if seen is not None:
        return EmailResult(EmailOutcome.DUPLICATE, seen)
    # PostgreSQL text cannot hold U+0000, and mail can carry anything: drop it rather than fail the message.
    subject = " ".join((subject or "").replace("\x00", "").split())[:MAX_SUBJECT] or NO_SUBJECT
    text = (text or "").replace("\x00", "")
    email = {
        "external_message_id": external_message_id,
        "in_reply_to": in_reply_to,
        "sender_email": sender_email,
        "subject": subject,
    }
    found = find_ticket_for_reply(conn, organization_id, sender_email, subject, in_reply_to)
    previous = None
    if found is not None:
        ticket = ticket_service.lock_ticket(conn, organization_id, found)
        status = TicketStatus(ticket["status"])
        if status is not TicketStatus.CLOSED:
            return _update(uow, ticket, status, text, received_at, email)
        previous = ticket["id"]
    created = creation.create_ticket(
        uow,
        organization_id,
        creation.NewTicket(
            subject=subject,
            description=text or "",
            channel=Channel.EMAIL,
            priority=Priority.NORMAL,
            requester_email=sender_email,
            conversation_id=conversation_id,
            previous_ticket_id=previous,
        ),
        now=received_at,
    )
    staff_actions.log_message(conn, created, direction="inbound", body=text or "", now=received_at, **email)
    return EmailResult(EmailOutcome.FOLLOW_UP if previous else EmailOutcome.CREATED, created["id"])


def _update(
    uow: UnitOfWork, ticket: dict[str, Any], status: TicketStatus, text: str, at: datetime, email: dict[str, Any]
) -> EmailResult:
    organization_id, ticket_id = ticket["organization_id"], ticket["id"]
    if status is TicketStatus.RESOLVED:
        staff_actions.log_message(uow.connection, ticket, direction="inbound", body=text or "", now=at, **email)
        if reply_meaning(text) is ReplyMeaning.CONFIRMED:
            requester_actions.confirm(uow, organization_id, ticket_id, actor_user_id=None, now=at, ticket=ticket)
            return EmailResult(EmailOutcome.CONFIRMED, ticket_id)
        requester_actions.reopen(
            uow, organization_id, ticket_id, reason=reopen_reason(text), actor_user_id=None, now=at, ticket=ticket
        )
        return EmailResult(EmailOutcome.REOPENED, ticket_id)
    requester_actions.customer_reply(
        uow, organization_id, ticket_id, message=text or "", actor_user_id=None, now=at, channel="email", **email
    )
    return EmailResult(
        EmailOutcome.RESUMED if status is TicketStatus.AWAITING_CUSTOMER else EmailOutcome.RECORDED, ticket_id
    )
