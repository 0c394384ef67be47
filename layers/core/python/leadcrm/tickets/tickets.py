"""Helpdesk tickets: create (route, arm the SLA clock), and every transition of §6 with its clock effect.

Each use case runs in the caller's unit of work, takes the ticket row FOR UPDATE, asks the pure state
machine (tickets.rules.states) for the next status, moves the resolution clock (tickets.rules.sla.SlaClock)
on the organization's calendar, and writes the ticket, its history (ticket_events) and an outbox event in
the same transaction. Triggers that reach the customer (a response, a request for information, a proposed
fix) answer the first-response target; a target missed before it was met or paused is recorded as a breach
there and then, so nothing depends on the sweep having run.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import Actor, MembershipStatus
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.directory.tables import memberships, users
from leadcrm.leads.activity import record_activity
from leadcrm.leads.tables import leads
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Forbidden, NotFound
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.tickets import config as ticket_config
from leadcrm.tickets.rules.mail import MailKind
from leadcrm.tickets.rules.routing import Channel, Priority, RequesterType, TicketFacts, first_match
from leadcrm.tickets.rules.sla import SlaClock, add_business_time, business_time_between
from leadcrm.tickets.rules.states import (
    REASSIGNABLE_STATUSES,
    InvalidTransition,
    TicketStatus,
    TimerState,
    Trigger,
    next_status,
    timer_state,
)
from leadcrm.tickets.tables import (
    ticket_events,
    ticket_mails,
    ticket_messages,
    ticket_settings,
    ticket_surveys,
    tickets,
)

TICKET_CREATED = "ticket.created"
TICKET_STATUS_CHANGED = "ticket.status_changed"
TICKET_ASSIGNED = "ticket.assigned"
TICKET_SLA_BREACHED = "ticket.sla_breached"
TICKET_OPENED_ACTIVITY = "ticket_opened"

# Triggers that put words in front of the customer: the first of them answers the first-response target.
CUSTOMER_FACING = frozenset({Trigger.RESPOND, Trigger.REQUEST_INFO, Trigger.RESOLVE})


def ticket_not_found() -> NotFound:
    return NotFound("Ticket not found.", code="TICKET_NOT_FOUND")


def _now(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC)


# -- history -------------------------------------------------------------------------------------------------


def record_events(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Ticket history entries in one statement (each row: organization_id, ticket_id, type, and optionally
    from_status, to_status, actor_user_id, payload, occurred_at)."""
    if not rows:
        return
    conn.execute(
        insert(ticket_events).values(
            [
                {
                    "id": uuid7(),
                    "from_status": None,
                    "to_status": None,
                    "actor_user_id": None,
                    "payload": {},
                    **row,
                }
                for row in rows
            ]
        )
    )


def _event(uow: UnitOfWork, event_type: str, ticket: dict[str, Any], payload: dict[str, Any]) -> None:
    uow.add_event(
        DomainEvent(
            type=event_type,
            organization_id=ticket["organization_id"],
            aggregate_id=ticket["id"],
            payload={"ticketId": str(ticket["id"]), **payload},
        )
    )


def _id(value: uuid.UUID | None) -> str | None:
    return str(value) if value is not None else None


# -- reads ---------------------------------------------------------------------------------------------------


def read_ticket(conn: Connection, organization_id: uuid.UUID, ticket_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(select(tickets).where(tickets.c.organization_id == organization_id, tickets.c.id == ticket_id))
        .mappings()
        .first()
    )
    if row is None:
        raise ticket_not_found()
    return dict(row)


def lock_ticket(conn: Connection, organization_id: uuid.UUID, ticket_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            select(tickets)
            .where(tickets.c.organization_id == organization_id, tickets.c.id == ticket_id)
            .with_for_update()
        )
        .mappings()
        .first()
    )
    if row is None:
        raise ticket_not_found()
    return dict(row)


# -- create --------------------------------------------------------------------------------------------------


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
            .where(leads.c.organization_id == organization_id, func.lower(leads.c.email) == address)
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
    now = _now(now)
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
                    "queueId": _id(rule.queue_id),
                    "assigneeUserId": _id(rule.assignee_user_id),
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
    _event(
        uow,
        TICKET_CREATED,
        ticket,
        {
            "number": ticket["number"],
            "channel": new.channel.value,
            "priority": new.priority.value,
            "status": status.value,
            "queueId": _id(ticket["queue_id"]),
            "assigneeUserId": _id(ticket["assignee_user_id"]),
            "actorUserId": _id(actor_user_id),
        },
    )
    return ticket


# -- transitions ---------------------------------------------------------------------------------------------


def _clock(ticket: dict[str, Any]) -> SlaClock:
    return SlaClock(
        elapsed=timedelta(seconds=ticket["resolution_elapsed_seconds"]), running_since=ticket["sla_running_since"]
    )


def _breaches_due(
    ticket: dict[str, Any], now: datetime, *, first_response_met: bool
) -> tuple[dict[str, Any], list[str]]:
    """Targets already missed that the sweep has not recorded yet: recorded now, before the clock they
    belong to stops or the first response erases the evidence. Breached at the due instant, not at now."""
    values: dict[str, Any] = {}
    missed = []
    if (
        first_response_met
        and ticket["first_responded_at"] is None
        and ticket["first_response_breached_at"] is None
        and ticket["first_response_due_at"] <= now
    ):
        values["first_response_breached_at"] = ticket["first_response_due_at"]
        missed.append("first_response")
    due = ticket["resolution_due_at"]
    if due is not None and ticket["resolution_breached_at"] is None and due <= now:
        values["resolution_breached_at"] = due
        missed.append("resolution")
    if missed:
        values["breach_count"] = ticket["breach_count"] + len(missed)
    return values, missed


def apply_trigger(
    uow: UnitOfWork,
    ticket: dict[str, Any],
    trigger: Trigger,
    *,
    actor_user_id: uuid.UUID | None,
    now: datetime,
    values: dict[str, Any] | None = None,
    payload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Moves a locked ticket by `trigger` (409 TICKET_INVALID_TRANSITION when §6 has no such row), with the
    clock effect of the state it enters, first-response capture and breaches; `values` are further columns
    the use case sets. Returns the ticket as written."""
    conn = uow.connection
    organization_id = ticket["organization_id"]
    source = TicketStatus(ticket["status"])
    target = next_status(source, trigger)
    ctx = ticket_config.sla_context(conn, organization_id)
    changes: dict[str, Any] = dict(values or {})
    first_response = trigger in CUSTOMER_FACING
    breach_values, missed = _breaches_due(ticket, now, first_response_met=first_response)
    changes.update(breach_values)
    if first_response and ticket["first_responded_at"] is None:
        changes["first_responded_at"] = now
        changes["first_response_seconds"] = int(
            business_time_between(ticket["created_at"], now, ctx.calendar).total_seconds()
        )
    clock = _clock(ticket)
    if trigger is Trigger.RESOLVE:
        changes["resolution_seconds"] = int(clock.elapsed_at(now, ctx.calendar).total_seconds())
    if target is TicketStatus.REOPENED:
        # §3: running from the reopen timestamp; §6: the SLA is recalculated for the new cycle.
        clock = clock.restart(now)
        changes.update(
            sla_cycle_started_at=now,
            resolution_breached_at=None,
            reopened_at=now,
            reopen_count=ticket["reopen_count"] + 1,
        )
    elif timer_state(target, resolved_pauses=ctx.resolved_pauses_timer) is TimerState.RUNNING:
        clock = clock.resume(now)
    else:
        clock = clock.pause(now, ctx.calendar)
    changes.update(
        status=target.value,
        resolution_elapsed_seconds=int(clock.elapsed.total_seconds()),
        sla_running_since=clock.running_since,
        resolution_due_at=clock.due(timedelta(minutes=ticket["resolution_target_minutes"]), ctx.calendar),
        updated_at=now,
    )
    conn.execute(update(tickets).where(tickets.c.id == ticket["id"]).values(**changes))
    base = {"organization_id": organization_id, "ticket_id": ticket["id"], "occurred_at": now}
    history = [
        {
            **base,
            "type": "status_changed",
            "from_status": source.value,
            "to_status": target.value,
            "actor_user_id": actor_user_id,
            "payload": {"trigger": trigger.value, **(payload or {})},
        }
    ]
    history += [
        {
            **base,
            "type": "sla_breached",
            "payload": {
                "target": name,
                "dueAt": breach_values[f"{name}_breached_at"].isoformat(),
                "accountableUserId": _id(ticket["assignee_user_id"]),
            },
        }
        for name in missed
    ]
    record_events(conn, history)
    written = read_ticket(conn, organization_id, ticket["id"])
    _event(
        uow,
        TICKET_STATUS_CHANGED,
        written,
        {
            "fromStatus": source.value,
            "toStatus": target.value,
            "trigger": trigger.value,
            "actorUserId": _id(actor_user_id),
        },
    )
    for name in missed:
        _event(uow, TICKET_SLA_BREACHED, written, {"target": name, "assigneeUserId": _id(ticket["assignee_user_id"])})
    return written


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


# -- assignment (§6 Unassigned → Assigned; a handover elsewhere) -----------------------------------------------


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
    now = _now(now)
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
        "fromAssigneeUserId": _id(ticket["assignee_user_id"]),
        "assigneeUserId": _id(values["assignee_user_id"]),
        "fromQueueId": _id(ticket["queue_id"]),
        "queueId": _id(values["queue_id"]),
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
    _event(uow, TICKET_ASSIGNED, written, {**payload, "actorUserId": _id(actor.user_id)})
    return written


# -- the agent's side ------------------------------------------------------------------------------------------


def respond(
    uow: UnitOfWork, actor: Actor, ticket_id: uuid.UUID, *, message: str = "", now: datetime | None = None
) -> dict[str, Any]:
    """The agent answered the customer (logged here; an email answer is sent by conversations, which calls
    this). Assigned or Reopened → In Progress; while In Progress or Awaiting Customer the answer is logged
    (and, for a ticket taken over after an escalation, is its first response). A ticket held by a queue only
    becomes the responding agent's."""
    conn = uow.connection
    now = _now(now)
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
        breach_values, missed = _breaches_due({**ticket, "resolution_due_at": None}, now, first_response_met=True)
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
                        "accountableUserId": _id(ticket["assignee_user_id"]),
                    },
                }
                for name in missed
            ),
        ],
    )
    written = read_ticket(conn, actor.organization_id, ticket_id)
    for name in missed:
        _event(uow, TICKET_SLA_BREACHED, written, {"target": name, "assigneeUserId": _id(ticket["assignee_user_id"])})
    return written


def request_info(
    uow: UnitOfWork, actor: Actor, ticket_id: uuid.UUID, *, message: str = "", now: datetime | None = None
) -> dict[str, Any]:
    """In Progress → Awaiting Customer: the clock pauses until the customer replies."""
    now = _now(now)
    ticket = lock_ticket(uow.connection, actor.organization_id, ticket_id)
    written = apply_trigger(uow, ticket, Trigger.REQUEST_INFO, actor_user_id=actor.user_id, now=now)
    log_message(uow.connection, ticket, direction="outbound", body=message, now=now, author_user_id=actor.user_id)
    return written


def resolve(
    uow: UnitOfWork, actor: Actor, ticket_id: uuid.UUID, *, resolution: str, now: datetime | None = None
) -> dict[str, Any]:
    """In Progress → Resolved with the resolution recorded; the customer is asked to confirm (a mail)."""
    now = _now(now)
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
    now = _now(now)
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
        payload={"fromAssigneeUserId": _id(ticket["assignee_user_id"]), "toAssigneeUserId": _id(actor.user_id)},
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
                    "fromAssigneeUserId": _id(ticket["assignee_user_id"]),
                    "toAssigneeUserId": _id(actor.user_id),
                    "escalatedAt": ticket["escalated_at"].isoformat() if ticket["escalated_at"] else None,
                    "chain": [*chain, _id(actor.user_id)],
                },
            }
        ],
    )
    return written


# -- the customer's side (staff record it from a call or chat; email arrives through tickets_email) -----------


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
    now = _now(now)
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
    now = _now(now)
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
    now = _now(now)
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


# -- mails -----------------------------------------------------------------------------------------------------


def queue_mails(conn: Connection, rows: list[dict[str, Any]], kind: MailKind, now: datetime) -> None:
    """A mail of `kind` for each ticket, `pending` for the sweep to send (in one statement), or `skipped` when
    the ticket has no address to write to. A survey mail comes with the ticket's survey row (one per ticket)."""
    if not rows:
        return
    conn.execute(
        insert(ticket_mails).values(
            [
                {
                    "id": uuid7(),
                    "organization_id": t["organization_id"],
                    "ticket_id": t["id"],
                    "kind": kind.value,
                    "status": "pending" if t["requester_email"] else "skipped",
                    "to_address": t["requester_email"],
                    "error": None if t["requester_email"] else "no address to write to",
                    "created_at": now,
                }
                for t in rows
            ]
        )
    )
    if kind is MailKind.SATISFACTION_SURVEY:
        conn.execute(
            pg_insert(ticket_surveys)
            .values([{"id": uuid7(), "organization_id": t["organization_id"], "ticket_id": t["id"]} for t in rows])
            .on_conflict_do_nothing(index_elements=["ticket_id"])
        )
