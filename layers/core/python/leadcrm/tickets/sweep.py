"""The scheduled ticket sweep (job `ticket_sweep`, every minute): escalate, record breaches, auto-close, mail.

1. Escalate (§6 Assigned → Escalated): assigned tickets without a first response whose used-up share of the
   first-response target reached the organization's `escalation_percent` (`first_response_warn_at`).
2. Breaches: a first-response target missed (no response by `first_response_due_at`, whatever the state,
   except closed) and a running resolution clock past `resolution_due_at`. Recorded at the due instant,
   once (each UPDATE only takes rows not yet marked), with the then-accountable agent in the history (§8:
   the assignee of the moment; a handover does not stop or reset anything).
3. Auto-close (§6 Resolved → Closed): resolved tickets whose customer said nothing within the
   organization's `auto_close_hours`; the satisfaction survey is queued as on any close.
4. Mail: pending ticket mails are claimed (`sending`, committed), sent through SES, and their outcome
   written (`sent` with the SES message id, or `failed` with the error). At most once, like the digest: a
   crash between claim and outcome leaves a `sending` row, never a second mail.

Steps 1–3 are set-based UPDATE … RETURNING statements over small partial indexes, each in one transaction
with its history rows and outbox events; a second run at the same instant finds nothing left to do.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Text, Uuid, case, func, select, update

from leadcrm.directory.tables import organizations
from leadcrm.platform import clock
from leadcrm.platform.adapters import ses
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.events import DomainEvent
from leadcrm.tickets import config as ticket_config
from leadcrm.tickets.rules.mail import MailKind, compose_confirmation, compose_survey, support_address
from leadcrm.tickets.rules.states import TicketStatus, Trigger
from leadcrm.tickets.tables import ticket_mails, ticket_settings, ticket_surveys, tickets
from leadcrm.tickets.tickets import TICKET_SLA_BREACHED, TICKET_STATUS_CHANGED, queue_mails, record_events

logger = logging.getLogger(__name__)

JOB_NAME = "ticket_sweep"
MAILS_PER_RUN = 100
MAX_ERROR_LENGTH = 500
LOCAL_SURVEY_URL = "http://127.0.0.1:8000/public/ticket-surveys/"

Sender = Callable[..., str]  # (to, subject, text, *, reply_to) -> provider message id


def survey_url_base() -> str:
    """Where the survey link points (TICKET_SURVEY_URL, ending in '/'; the token is appended)."""
    return os.environ.get("TICKET_SURVEY_URL") or LOCAL_SURVEY_URL


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def run_ticket_sweep(now: datetime | None = None, *, send: Sender | None = None) -> dict[str, int]:
    """The scheduled job; `now` and `send` are for tests. Counts only."""
    now = (now or clock.now()).astimezone(UTC)
    with UnitOfWork() as uow:
        stats = {
            "escalated": _escalate(uow, now),
            "breached": _breaches(uow, now),
            "autoClosed": _auto_close(uow, now),
        }
        uow.commit()
    sent, failed = deliver_mails(now, send=send or ses.send_email)
    return {**stats, "mailsSent": sent, "mailsFailed": failed}


def _outbox(uow: UnitOfWork, event_type: str, row: Any, payload: dict[str, Any]) -> None:
    uow.add_event(
        DomainEvent(
            type=event_type,
            organization_id=row.organization_id,
            aggregate_id=row.id,
            payload={"ticketId": str(row.id), **payload},
        )
    )


def id_text(value: uuid.UUID | None) -> str | None:
    return str(value) if value is not None else None


def _escalate(uow: UnitOfWork, now: datetime) -> int:
    rows = uow.connection.execute(
        update(tickets)
        .where(
            tickets.c.status == TicketStatus.ASSIGNED.value,
            tickets.c.first_responded_at.is_(None),
            tickets.c.escalated_at.is_(None),
            tickets.c.first_response_warn_at <= now,
        )
        .values(status=TicketStatus.ESCALATED.value, escalated_at=now, updated_at=now)
        .returning(tickets.c.id, tickets.c.organization_id, tickets.c.assignee_user_id, tickets.c.queue_id)
    ).all()
    record_events(
        uow.connection,
        [
            {
                "organization_id": r.organization_id,
                "ticket_id": r.id,
                "type": "status_changed",
                "from_status": TicketStatus.ASSIGNED.value,
                "to_status": TicketStatus.ESCALATED.value,
                "occurred_at": now,
                "payload": {
                    "trigger": Trigger.ESCALATE.value,
                    "accountableUserId": id_text(r.assignee_user_id),
                    "queueId": id_text(r.queue_id),
                },
            }
            for r in rows
        ],
    )
    for r in rows:
        _outbox(
            uow,
            TICKET_STATUS_CHANGED,
            r,
            {"fromStatus": "assigned", "toStatus": "escalated", "trigger": Trigger.ESCALATE.value, "actorUserId": None},
        )
    return len(rows)


def _breaches(uow: UnitOfWork, now: datetime) -> int:
    conn = uow.connection
    first = conn.execute(
        update(tickets)
        .where(
            tickets.c.first_responded_at.is_(None),
            tickets.c.first_response_breached_at.is_(None),
            tickets.c.status != TicketStatus.CLOSED.value,
            tickets.c.first_response_due_at <= now,
        )
        .values(first_response_breached_at=tickets.c.first_response_due_at, breach_count=tickets.c.breach_count + 1)
        .returning(
            tickets.c.id,
            tickets.c.organization_id,
            tickets.c.assignee_user_id,
            tickets.c.first_response_due_at.label("due_at"),
        )
    ).all()
    resolution = conn.execute(
        update(tickets)
        .where(
            tickets.c.resolution_due_at.is_not(None),
            tickets.c.resolution_breached_at.is_(None),
            tickets.c.resolution_due_at <= now,
        )
        .values(resolution_breached_at=tickets.c.resolution_due_at, breach_count=tickets.c.breach_count + 1)
        .returning(
            tickets.c.id,
            tickets.c.organization_id,
            tickets.c.assignee_user_id,
            tickets.c.resolution_due_at.label("due_at"),
        )
    ).all()
    found = [("first_response", r) for r in first] + [("resolution", r) for r in resolution]
    record_events(
        conn,
        [
            {
                "organization_id": r.organization_id,
                "ticket_id": r.id,
                "type": "sla_breached",
                "occurred_at": now,
                "payload": {
                    "target": target,
                    "dueAt": r.due_at.isoformat(),
                    "accountableUserId": id_text(r.assignee_user_id),
                },
            }
            for target, r in found
        ],
    )
    for target, r in found:
        _outbox(uow, TICKET_SLA_BREACHED, r, {"target": target, "assigneeUserId": id_text(r.assignee_user_id)})
    return len(found)


def _auto_close(uow: UnitOfWork, now: datetime) -> int:
    conn = uow.connection
    window_over = tickets.c.resolved_at + func.make_interval(0, 0, 0, 0, ticket_settings.c.auto_close_hours) <= now
    rows = conn.execute(
        update(tickets)
        .where(
            tickets.c.status == TicketStatus.RESOLVED.value,
            ticket_settings.c.organization_id == tickets.c.organization_id,
            window_over,
        )
        .values(
            status=TicketStatus.CLOSED.value,
            closed_at=now,
            close_reason="auto_closed",
            sla_running_since=None,
            resolution_due_at=None,
            updated_at=now,
        )
        .returning(tickets.c.id, tickets.c.organization_id, tickets.c.requester_email)
    ).all()
    record_events(
        conn,
        [
            {
                "organization_id": r.organization_id,
                "ticket_id": r.id,
                "type": "status_changed",
                "from_status": TicketStatus.RESOLVED.value,
                "to_status": TicketStatus.CLOSED.value,
                "occurred_at": now,
                "payload": {"trigger": Trigger.AUTO_CLOSE.value},
            }
            for r in rows
        ],
    )
    queue_mails(
        conn,
        [{"id": r.id, "organization_id": r.organization_id, "requester_email": r.requester_email} for r in rows],
        MailKind.SATISFACTION_SURVEY,
        now,
    )
    for r in rows:
        _outbox(
            uow,
            TICKET_STATUS_CHANGED,
            r,
            {"fromStatus": "resolved", "toStatus": "closed", "trigger": Trigger.AUTO_CLOSE.value, "actorUserId": None},
        )
    return len(rows)


# -- mail delivery -----------------------------------------------------------------------------------------------


def deliver_mails(now: datetime, *, send: Sender) -> tuple[int, int]:
    claimed = _claim_mails(now)
    outcomes = [_send(send, mail) for mail in claimed]
    _record_outcomes(outcomes, now)
    sent = sum(1 for o in outcomes if o["status"] == "sent")
    return sent, len(outcomes) - sent


def _claim_mails(now: datetime) -> list[dict[str, Any]]:
    """Claims up to MAILS_PER_RUN pending mails (SKIP LOCKED: overlapping runs never take the same one) and
    composes them; a survey mail gets its token here, whose digest is stored in the same commit."""
    with UnitOfWork() as uow:
        conn = uow.connection
        pending = (
            select(ticket_mails.c.id)
            .where(ticket_mails.c.status == "pending")
            .order_by(ticket_mails.c.created_at)
            .limit(MAILS_PER_RUN)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        claimed = conn.execute(
            update(ticket_mails)
            .where(ticket_mails.c.id.in_(pending))
            .values(status="sending")
            .returning(ticket_mails.c.id, ticket_mails.c.ticket_id, ticket_mails.c.kind, ticket_mails.c.to_address)
        ).all()
        if not claimed:
            return []
        facts = {
            r.id: r
            for r in conn.execute(
                select(
                    tickets.c.id,
                    tickets.c.organization_id,
                    tickets.c.number,
                    tickets.c.subject,
                    tickets.c.resolution,
                    organizations.c.name.label("organization_name"),
                    ticket_settings.c.support_token,
                    ticket_settings.c.auto_close_hours,
                )
                .select_from(
                    tickets.join(organizations, organizations.c.id == tickets.c.organization_id).join(
                        ticket_settings, ticket_settings.c.organization_id == tickets.c.organization_id
                    )
                )
                .where(tickets.c.id.in_([m.ticket_id for m in claimed]))
            )
        }
        domain = ticket_config.inbound_domain()
        mails, tokens = [], []
        for mail in claimed:
            ticket = facts[mail.ticket_id]
            if mail.kind == MailKind.SATISFACTION_SURVEY.value:
                token = secrets.token_urlsafe(32)
                tokens.append({"ticket_id": ticket.id, "token_digest": token_digest(token)})
                composed = compose_survey(
                    ticket.number, ticket.subject, ticket.organization_name, f"{survey_url_base()}{token}"
                )
            else:
                composed = compose_confirmation(
                    ticket.number,
                    ticket.subject,
                    ticket.resolution or "",
                    ticket.organization_name,
                    ticket.auto_close_hours,
                )
            mails.append(
                {
                    "id": mail.id,
                    "organization_id": ticket.organization_id,
                    "ticket_id": ticket.id,
                    "kind": mail.kind,
                    "to": mail.to_address,
                    "mail": composed,
                    "reply_to": support_address(ticket.support_token, domain),
                }
            )
        if tokens:
            source = recordset("survey_tokens", "survey_tokens", tokens, {"ticket_id": Uuid, "token_digest": Text})
            conn.execute(
                update(ticket_surveys)
                .where(ticket_surveys.c.ticket_id == source.c.ticket_id, ticket_surveys.c.answered_at.is_(None))
                .values(token_digest=source.c.token_digest)
            )
        uow.commit()
    return mails


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None)
    if isinstance(response, dict) and response.get("Error", {}).get("Code"):
        return str(response["Error"]["Code"])
    return type(error).__name__


def _send(send: Sender, mail: dict[str, Any]) -> dict[str, Any]:
    try:
        message_id = send(mail["to"], mail["mail"].subject, mail["mail"].text, reply_to=mail["reply_to"])
    except Exception as error:  # recorded on the mail row; never retried (see the module doc)
        code = _error_code(error)
        logger.warning("ticket mail not sent", extra={"ticketMailId": str(mail["id"]), "errorCode": code})
        return {**mail, "status": "failed", "error": f"{code}: {error}"[:MAX_ERROR_LENGTH], "provider_message_id": None}
    return {**mail, "status": "sent", "error": None, "provider_message_id": message_id}


def _record_outcomes(outcomes: list[dict[str, Any]], now: datetime) -> None:
    if not outcomes:
        return
    rows = [
        {"id": o["id"], "status": o["status"], "error": o["error"], "provider_message_id": o["provider_message_id"]}
        for o in outcomes
    ]
    source = recordset(
        "mail_outcomes", "mail_outcomes", rows, {"id": Uuid, "status": Text, "error": Text, "provider_message_id": Text}
    )
    with UnitOfWork() as uow:
        uow.connection.execute(
            update(ticket_mails)
            .where(ticket_mails.c.id == source.c.id)
            .values(
                status=source.c.status,
                error=source.c.error,
                provider_message_id=source.c.provider_message_id,
                sent_at=case((source.c.status == "sent", sql_now())),
            )
        )
        record_events(
            uow.connection,
            [
                {
                    "organization_id": o["organization_id"],
                    "ticket_id": o["ticket_id"],
                    "type": f"mail_{o['status']}",
                    "occurred_at": now,
                    "payload": {"kind": o["kind"], "ticketMailId": str(o["id"])},
                }
                for o in outcomes
            ],
        )
        uow.commit()
