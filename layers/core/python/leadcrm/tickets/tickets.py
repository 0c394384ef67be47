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
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.platform import clock
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import NotFound
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.tickets import config as ticket_config
from leadcrm.tickets.rules.mail import MailKind
from leadcrm.tickets.rules.sla import SlaClock, business_time_between
from leadcrm.tickets.rules.states import (
    TicketStatus,
    TimerState,
    Trigger,
    next_status,
    timer_state,
)
from leadcrm.tickets.tables import (
    ticket_events,
    ticket_mails,
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


def now_or_clock(now: datetime | None) -> datetime:
    return (now or clock.now()).astimezone(UTC)


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


def ticket_event(uow: UnitOfWork, event_type: str, ticket: dict[str, Any], payload: dict[str, Any]) -> None:
    uow.add_event(
        DomainEvent(
            type=event_type,
            organization_id=ticket["organization_id"],
            aggregate_id=ticket["id"],
            payload={"ticketId": str(ticket["id"]), **payload},
        )
    )


def id_text(value: uuid.UUID | None) -> str | None:
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










# -- transitions ---------------------------------------------------------------------------------------------


def _clock(ticket: dict[str, Any]) -> SlaClock:
    return SlaClock(
        elapsed=timedelta(seconds=ticket["resolution_elapsed_seconds"]), running_since=ticket["sla_running_since"]
    )


def breaches_due(
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
    breach_values, missed = breaches_due(ticket, now, first_response_met=first_response)
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
                "accountableUserId": id_text(ticket["assignee_user_id"]),
            },
        }
        for name in missed
    ]
    record_events(conn, history)
    written = read_ticket(conn, organization_id, ticket["id"])
    ticket_event(
        uow,
        TICKET_STATUS_CHANGED,
        written,
        {
            "fromStatus": source.value,
            "toStatus": target.value,
            "trigger": trigger.value,
            "actorUserId": id_text(actor_user_id),
        },
    )
    for name in missed:
        breach = {"target": name, "assigneeUserId": id_text(ticket["assignee_user_id"])}
        ticket_event(uow, TICKET_SLA_BREACHED, written, breach)
    return written




# -- assignment (§6 Unassigned → Assigned; a handover elsewhere) -----------------------------------------------




# -- the agent's side ------------------------------------------------------------------------------------------










# -- the customer's side (staff record it from a call or chat; email arrives through tickets_email) -----------








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
