"""What staff do with a ticket: log a message, assign, respond, ask for information, resolve, take ownership of
an escalated ticket. Each runs under the ticket's row lock and goes through the SLA triggers (tickets.tickets)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Forbidden
from leadcrm.platform.ids import uuid7
from leadcrm.tickets import config as ticket_config
from leadcrm.tickets.rules.mail import MailKind
from leadcrm.tickets.rules.sla import business_time_between
from leadcrm.tickets.rules.states import (
    REASSIGNABLE_STATUSES,
    InvalidTransition,
    TicketStatus,
    Trigger,
)
from leadcrm.tickets.tables import (
    ticket_events,
    ticket_messages,
    tickets,
)
from leadcrm.tickets.tickets import (
    TICKET_ASSIGNED,
    TICKET_SLA_BREACHED,
    apply_trigger,
    breaches_due,
    id_text,
    lock_ticket,
    now_or_clock,
    queue_mails,
    read_ticket,
    record_events,
    ticket_event,
)


def log_message(
    conn: Connection,
    ticket: dict[str, Any],
    *,
    direction: str,
    body: str,
    now: datetime,
    author_user_id: uuid.UUID | None = None,
    channel: str | None = None,
    external_message_id: str | None = None,
    in_reply_to: str | None = None,
    sender_email: str | None = None,
    subject: str | None = None,
) -> None:
    conn.execute(
        insert(ticket_messages).values(
            id=uuid7(),
            organization_id=ticket["organization_id"],
            ticket_id=ticket["id"],
            direction=direction,
            channel=channel or ticket["channel"],
            external_message_id=external_message_id,
            in_reply_to=in_reply_to,
            sender_email=sender_email,
            subject=subject,
            body=body,
            author_user_id=author_user_id,
            occurred_at=now,
        )
    )

def assign(
    uow: UnitOfWork,
    actor: Actor,
    ticket_id: uuid.UUID,
    *,
    assignee_user_id: uuid.UUID | None,
    queue_id: uuid.UUID | None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Gives the ticket an agent and/or a queue (what is not sent stays). From the triage queue this is §6's
    Unassigned → Assigned; in any other open state it is a handover: the new agent becomes accountable for
    the SLA and the clock carries on untouched (§8). 400 ASSIGNEE_NOT_STAFF, 404 TICKET_QUEUE_NOT_FOUND."""
    conn = uow.connection
    now = now_or_clock(now)
    if assignee_user_id is not None:
        require_assignable_staff(conn, actor.organization_id, assignee_user_id)
    if queue_id is not None:
        ticket_config.require_live_queue(conn, actor.organization_id, queue_id)
    ticket = lock_ticket(conn, actor.organization_id, ticket_id)
    status = TicketStatus(ticket["status"])
    values = {
        "assignee_user_id": assignee_user_id if assignee_user_id is not None else ticket["assignee_user_id"],
        "queue_id": queue_id if queue_id is not None else ticket["queue_id"],
    }
    payload = {
        "fromAssigneeUserId": id_text(ticket["assignee_user_id"]),
        "assigneeUserId": id_text(values["assignee_user_id"]),
        "fromQueueId": id_text(ticket["queue_id"]),
        "queueId": id_text(values["queue_id"]),
    }
    history = {
        "organization_id": actor.organization_id,
        "ticket_id": ticket_id,
        "type": "assigned",
        "actor_user_id": actor.user_id,
        "occurred_at": now,
        "payload": payload,
    }
    if status is TicketStatus.UNASSIGNED:
        written = apply_trigger(uow, ticket, Trigger.ASSIGN, actor_user_id=actor.user_id, now=now, values=values)
    elif status in REASSIGNABLE_STATUSES:
        conn.execute(update(tickets).where(tickets.c.id == ticket_id).values(**values, updated_at=now))
        written = read_ticket(conn, actor.organization_id, ticket_id)
    else:
        raise InvalidTransition(status, Trigger.ASSIGN)
    record_events(conn, [history])
    ticket_event(uow, TICKET_ASSIGNED, written, {**payload, "actorUserId": id_text(actor.user_id)})
    return written

def respond(
    uow: UnitOfWork, actor: Actor, ticket_id: uuid.UUID, *, message: str = "", now: datetime | None = None
) -> dict[str, Any]:
    """The agent answered the customer (logged here; an email answer is sent by conversations, which calls
    this). Assigned or Reopened → In Progress; while In Progress or Awaiting Customer the answer is logged
    (and, for a ticket taken over after an escalation, is its first response). A ticket held by a queue only
    becomes the responding agent's."""
    conn = uow.connection
    now = now_or_clock(now)
    ticket = lock_ticket(conn, actor.organization_id, ticket_id)
    status = TicketStatus(ticket["status"])
    log_message(conn, ticket, direction="outbound", body=message, now=now, author_user_id=actor.user_id)
    owner = {"assignee_user_id": ticket["assignee_user_id"] or actor.user_id}
    if status in (TicketStatus.ASSIGNED, TicketStatus.REOPENED):
        return apply_trigger(uow, ticket, Trigger.RESPOND, actor_user_id=actor.user_id, now=now, values=owner)
    if status not in (TicketStatus.IN_PROGRESS, TicketStatus.AWAITING_CUSTOMER):
        raise InvalidTransition(status, Trigger.RESPOND)
    changes: dict[str, Any] = {**owner, "updated_at": now}
    missed: list[str] = []
    if ticket["first_responded_at"] is None:
        ctx = ticket_config.sla_context(conn, actor.organization_id)
        breach_values, missed = breaches_due({**ticket, "resolution_due_at": None}, now, first_response_met=True)
        changes.update(
            breach_values,
            first_responded_at=now,
            first_response_seconds=int(business_time_between(ticket["created_at"], now, ctx.calendar).total_seconds()),
        )
    conn.execute(update(tickets).where(tickets.c.id == ticket_id).values(**changes))
    record_events(
        conn,
        [
            {
                "organization_id": actor.organization_id,
                "ticket_id": ticket_id,
                "type": "responded",
                "actor_user_id": actor.user_id,
                "occurred_at": now,
                "payload": {},
            },
            *(
                {
                    "organization_id": actor.organization_id,
                    "ticket_id": ticket_id,
                    "type": "sla_breached",
                    "occurred_at": now,
                    "payload": {
                        "target": name,
                        "dueAt": ticket["first_response_due_at"].isoformat(),
                        "accountableUserId": id_text(ticket["assignee_user_id"]),
                    },
                }
                for name in missed
            ),
        ],
    )
    written = read_ticket(conn, actor.organization_id, ticket_id)
    for name in missed:
        breach = {"target": name, "assigneeUserId": id_text(ticket["assignee_user_id"])}
        ticket_event(uow, TICKET_SLA_BREACHED, written, breach)
    return written

def request_info(
    uow: UnitOfWork, actor: Actor, ticket_id: uuid.UUID, *, message: str = "", now: datetime | None = None
) -> dict[str, Any]:
    """In Progress → Awaiting Customer: the clock pauses until the customer replies."""
    now = now_or_clock(now)
    ticket = lock_ticket(uow.connection, actor.organization_id, ticket_id)
    written = apply_trigger(uow, ticket, Trigger.REQUEST_INFO, actor_user_id=actor.user_id, now=now)
    log_message(uow.connection, ticket, direction="outbound", body=message, now=now, author_user_id=actor.user_id)
    return written

def resolve(
    uow: UnitOfWork, actor: Actor, ticket_id: uuid.UUID, *, resolution: str, now: datetime | None = None
) -> dict[str, Any]:
    """In Progress → Resolved with the resolution recorded; the customer is asked to confirm (a mail)."""
    now = now_or_clock(now)
    ticket = lock_ticket(uow.connection, actor.organization_id, ticket_id)
    written = apply_trigger(
        uow,
        ticket,
        Trigger.RESOLVE,
        actor_user_id=actor.user_id,
        now=now,
        values={"resolution": resolution, "resolved_at": now},
    )
    queue_mails(uow.connection, [written], MailKind.RESOLUTION_CONFIRMATION, now)
    return written

def take_ownership(
    uow: UnitOfWork, actor: Actor, ticket_id: uuid.UUID, *, now: datetime | None = None
) -> dict[str, Any]:
    """Escalated → In Progress when a higher-tier agent takes it: an owner or admin, or the queue's escalation
    agent (403 TICKET_HIGHER_TIER_ONLY otherwise). The escalation chain (who held it, who took it) is recorded;
    the taker is now accountable and the clock has kept running all along."""
    conn = uow.connection
    now = now_or_clock(now)
    ticket = lock_ticket(conn, actor.organization_id, ticket_id)
    if TicketStatus(ticket["status"]) is not TicketStatus.ESCALATED:
        raise InvalidTransition(TicketStatus(ticket["status"]), Trigger.TAKE_OWNERSHIP)
    escalation_user = None
    if ticket["queue_id"] is not None:
        escalation_user = ticket_config.read_queue(conn, actor.organization_id, ticket["queue_id"])[
            "escalation_user_id"
        ]
    if not (actor.is_manager or (actor.user_id is not None and actor.user_id == escalation_user)):
        raise Forbidden(
            "Only a higher-tier agent (an owner, an admin or the queue's escalation agent) takes over an "
            "escalated ticket.",
            code="TICKET_HIGHER_TIER_ONLY",
        )
    chain = [
        e["payload"].get("toAssigneeUserId")
        for e in conn.execute(
            select(ticket_events.c.payload)
            .where(
                ticket_events.c.organization_id == actor.organization_id,
                ticket_events.c.ticket_id == ticket_id,
                ticket_events.c.type == "escalation_chain",
            )
            .order_by(ticket_events.c.occurred_at, ticket_events.c.id)
        ).mappings()
    ]
    written = apply_trigger(
        uow,
        ticket,
        Trigger.TAKE_OWNERSHIP,
        actor_user_id=actor.user_id,
        now=now,
        values={"assignee_user_id": actor.user_id},
        payload={"fromAssigneeUserId": id_text(ticket["assignee_user_id"]), "toAssigneeUserId": id_text(actor.user_id)},
    )
    record_events(
        conn,
        [
            {
                "organization_id": actor.organization_id,
                "ticket_id": ticket_id,
                "type": "escalation_chain",
                "actor_user_id": actor.user_id,
                "occurred_at": now,
                "payload": {
                    "fromAssigneeUserId": id_text(ticket["assignee_user_id"]),
                    "toAssigneeUserId": id_text(actor.user_id),
                    "escalatedAt": ticket["escalated_at"].isoformat() if ticket["escalated_at"] else None,
                    "chain": [*chain, id_text(actor.user_id)],
                },
            }
        ],
    )
    return written
