"""Opening a ticket (staff, a member, or inbound support mail): who the requester is, the queue and priority the
routing rules give it, its SLA clock, and the mails it queues."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from leadcrm.directory.rules import MembershipStatus
from leadcrm.directory.tables import memberships, users
from leadcrm.leads.activity import record_activity
from leadcrm.leads.dedup import email_key_in
from leadcrm.leads.tables import leads
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import NotFound
from leadcrm.platform.ids import uuid7
from leadcrm.tickets import config as ticket_config
from leadcrm.tickets.rules.routing import Channel, Priority, RequesterType, TicketFacts, first_match
from leadcrm.tickets.rules.sla import SlaClock, add_business_time
from leadcrm.tickets.rules.states import (
    TicketStatus,
    Trigger,
    next_status,
)
from leadcrm.tickets.tables import (
    ticket_settings,
    tickets,
)
from leadcrm.tickets.tickets import (
    TICKET_CREATED,
    TICKET_OPENED_ACTIVITY,
    id_text,
    now_or_clock,
    read_ticket,
    record_events,
    ticket_event,
)


@dataclass(frozen=True)
class NewTicket:
    subject: str
    description: str
    channel: Channel
    priority: Priority = Priority.NORMAL
    lead_id: uuid.UUID | None = None
    membership_id: uuid.UUID | None = None
    # The address mail goes to; for a lead or member it defaults to theirs. Email tickets: the sender.
    requester_email: str | None = None
    conversation_id: uuid.UUID | None = None
    previous_ticket_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Requester:
    type: RequesterType
    lead_id: uuid.UUID | None
    membership_id: uuid.UUID | None
    email: str | None


def requester_of(conn: Connection, organization_id: uuid.UUID, new: NewTicket) -> Requester:
    """Who asks: the lead or membership named (404 when it is not this organization's), or, for mail from an
    address, the member or lead of the organization with that address (a member first), else unknown."""
    if new.lead_id is not None:
        lead = conn.execute(
            select(leads.c.id, leads.c.email).where(
                leads.c.organization_id == organization_id, leads.c.id == new.lead_id
            )
        ).first()
        if lead is None:
            raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
        return Requester(RequesterType.LEAD, lead.id, None, new.requester_email or lead.email)
    if new.membership_id is not None:
        member = conn.execute(
            select(memberships.c.id, users.c.email)
            .select_from(memberships.join(users, users.c.id == memberships.c.user_id))
            .where(
                memberships.c.organization_id == organization_id,
                memberships.c.id == new.membership_id,
                memberships.c.deleted_at.is_(None),
            )
        ).first()
        if member is None:
            raise NotFound("Membership not found.", code="MEMBERSHIP_NOT_FOUND")
        return Requester(RequesterType.MEMBER, None, member.id, new.requester_email or member.email)
    if new.requester_email:
        address = new.requester_email.strip().lower()
        member = conn.execute(
            select(memberships.c.id)
            .select_from(memberships.join(users, users.c.id == memberships.c.user_id))
            .where(
                memberships.c.organization_id == organization_id,
                memberships.c.deleted_at.is_(None),
                memberships.c.status == MembershipStatus.ACTIVE.value,
                func.lower(users.c.email) == address,
            )
            .order_by(memberships.c.id)
            .limit(1)
        ).scalar()
        if member is not None:
            return Requester(RequesterType.MEMBER, None, member, new.requester_email)
        lead = conn.execute(
            select(leads.c.id)
            .where(email_key_in(organization_id, [address]))
            .order_by(leads.c.archived_at.is_not(None), leads.c.created_at.desc())
            .limit(1)
        ).scalar()
        if lead is not None:
            return Requester(RequesterType.LEAD, lead, None, new.requester_email)
    return Requester(RequesterType.UNKNOWN, None, None, new.requester_email)


def create_ticket(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    new: NewTicket,
    *,
    actor_user_id: uuid.UUID | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The ticket, numbered, routed (§6 New → Assigned | Unassigned, in the same transaction) and with its SLA
    clock armed from `now` on the organization's calendar."""
    conn = uow.connection
    now = now_or_clock(now)
    requester = requester_of(conn, organization_id, new)
    ticket_config.ensure_settings(conn, organization_id)
    # The counter row is the organization's ticket-number lock: numbers are gapless and unique.
    settings = dict(
        conn.execute(
            update(ticket_settings)
            .where(ticket_settings.c.organization_id == organization_id)
            .values(last_ticket_number=ticket_settings.c.last_ticket_number + 1)
            .returning(*ticket_settings.c)
        )
        .mappings()
        .one()
    )
    ctx = ticket_config.sla_context(conn, organization_id, settings)
    first_target, resolution_target = ctx.target(new.priority)
    clock = SlaClock.started(now)
    facts = TicketFacts(new.channel, new.priority, requester.type, new.subject, new.description)
    rule = first_match(ticket_config.routing_rules(conn, organization_id), facts)
    status = next_status(TicketStatus.NEW, Trigger.ROUTE_MATCHED if rule else Trigger.ROUTE_UNMATCHED)
    ticket_id = uuid7()
    values = {
        "id": ticket_id,
        "organization_id": organization_id,
        "number": settings["last_ticket_number"],
        "subject": new.subject,
        "description": new.description,
        "status": status.value,
        "priority": new.priority.value,
        "channel": new.channel.value,
        "requester_type": requester.type.value,
        "lead_id": requester.lead_id,
        "membership_id": requester.membership_id,
        "requester_email": requester.email,
        "queue_id": rule.queue_id if rule else None,
        "assignee_user_id": rule.assignee_user_id if rule else None,
        "routing_rule_id": rule.id if rule else None,
        "conversation_id": new.conversation_id,
        "previous_ticket_id": new.previous_ticket_id,
        "created_by_user_id": actor_user_id,
        "first_response_target_minutes": int(first_target.total_seconds() // 60),
        "resolution_target_minutes": int(resolution_target.total_seconds() // 60),
        "first_response_due_at": add_business_time(now, first_target, ctx.calendar),
        "first_response_warn_at": add_business_time(now, ctx.warn_share(first_target), ctx.calendar),
        "sla_cycle_started_at": now,
        "resolution_elapsed_seconds": 0,
        "sla_running_since": clock.running_since,
        "resolution_due_at": clock.due(resolution_target, ctx.calendar),
        "created_at": now,
        "updated_at": now,
    }
    conn.execute(insert(tickets).values(**values))
    base = {"organization_id": organization_id, "ticket_id": ticket_id, "occurred_at": now}
    history = [
        {
            **base,
            "type": "created",
            "to_status": TicketStatus.NEW.value,
            "actor_user_id": actor_user_id,
            "payload": {"channel": new.channel.value, "priority": new.priority.value},
        },
        {
            **base,
            "type": "status_changed",
            "from_status": TicketStatus.NEW.value,
            "to_status": status.value,
            "payload": {"trigger": (Trigger.ROUTE_MATCHED if rule else Trigger.ROUTE_UNMATCHED).value},
        },
    ]
    if rule is not None:
        history.append(
            {
                **base,
                "type": "assigned",
                "payload": {
                    "routingRuleId": str(rule.id),
                    "queueId": id_text(rule.queue_id),
                    "assigneeUserId": id_text(rule.assignee_user_id),
                    "fromQueueId": None,
                    "fromAssigneeUserId": None,
                },
            }
        )
    record_events(conn, history)
    if requester.lead_id is not None:  # the lead's timeline shows its support requests
        record_activity(
            conn,
            organization_id,
            requester.lead_id,
            TICKET_OPENED_ACTIVITY,
            {"ticketId": str(ticket_id), "number": settings["last_ticket_number"], "channel": new.channel.value},
            actor_user_id,
        )
    ticket = read_ticket(conn, organization_id, ticket_id)
    ticket_event(
        uow,
        TICKET_CREATED,
        ticket,
        {
            "number": ticket["number"],
            "channel": new.channel.value,
            "priority": new.priority.value,
            "status": status.value,
            "queueId": id_text(ticket["queue_id"]),
            "assigneeUserId": id_text(ticket["assignee_user_id"]),
            "actorUserId": id_text(actor_user_id),
        },
    )
    return ticket
