"""Inbound email (spec G10): SES stores the raw message in S3, the S3 event reaches the ingestion queue, and
the ingestion function calls `receive_from_s3`.

1. The MIME is parsed (`conversations.rules.inbound_email`): charset-aware body, quoted history and signature stripped.
2. A message SES marked as spam or virus is dropped and counted (metric `InboundEmailDropped`), nothing
   written.
3. The thread is resolved from a recipient address (`resolve_recipient`): a signed reply address of ours
   (`conversations.rules.reply_addresses`) with a valid signature. The organization is the one of the row the address
   names, never one the message claims. An address that resolves to nothing (forged or stale signature,
   erased lead, unknown domain) creates nothing and is counted as `unroutable`.
4. `record_inbound`: the message is inserted idempotently on (channel, external message id) — a redelivered
   S3 event or a resent mail records nothing more — then, only for a new row, the thread's unread count + 1,
   the thread re-opened, the lead's last_inbound_at stamped and `conversation.inbound_received` appended
   (ids only), all in one transaction.
5. A reply to a bulk mail (`contact+ol-<lead id>…`) finds or creates the lead's email thread first, and the
   lead is marked contacted (new → contacted, best-effort): a reply is real engagement.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from sqlalchemy import Connection, select

from leadcrm.conversations.inbound import record_inbound_message
from leadcrm.conversations.rules.inbound_email import InboundEmail, parse_inbound
from leadcrm.conversations.rules.messages import Channel
from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, parse_reply_address
from leadcrm.conversations.sending import mark_contacted
from leadcrm.conversations.tables import conversations
from leadcrm.conversations.threads import find_or_create_thread
from leadcrm.directory.rules import system_actor
from leadcrm.leads.tables import leads
from leadcrm.platform import clock, mail_keys
from leadcrm.platform.adapters import s3
from leadcrm.platform.adapters.aws import error_code
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.tickets.email import open_or_update_ticket_from_email, organization_for_support_address

logger = logging.getLogger(__name__)

METRICS_NAMESPACE = "LeadCRM"
MISSING_OBJECT_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "404"})
DROPPED_METRIC = "InboundEmailDropped"


@dataclass(frozen=True)
class InboundOutcome:
    """What became of one message: recorded, duplicate, spam, virus or unroutable (ids only)."""

    outcome: str
    conversation_id: uuid.UUID | None = None
    message_id: uuid.UUID | None = None


def receive_from_s3(bucket: str, key: str) -> InboundOutcome:
    """The ingestion consumer's entry point for one S3 ObjectCreated record (keys arrive URL-encoded)."""
    object_key = unquote_plus(key)
    try:
        raw = s3.read_object(bucket, object_key)
    except Exception as error:
        # An object that is gone (expired, deleted, or a test notification's) never will be there: retrying
        # would only end in the DLQ. Anything else (throttling, a network error) is retried by the queue.
        if error_code(error) in MISSING_OBJECT_CODES:
            return _dropped("missing_object")
        raise
    return receive_raw(raw, fallback_message_id=f"<{object_key}@s3>")


def resolve_recipient(address: str) -> AddressTarget | None:
    """The target one recipient address names: a thread (`contact+<conversation id>.<sig>`) or a lead
    (`contact+ol-<lead id>.<sig>`) when its signature is valid; None otherwise. Another kind of address
    (a helpdesk support address, say) is added here, next to these."""
    return parse_reply_address(address, mail_keys.signing_keys(), mail_keys.inbound_domain())


def receive_raw(raw: bytes, *, fallback_message_id: str) -> InboundOutcome:
    email = parse_inbound(raw)
    if email.dropped_reason is not None:
        return _dropped(email.dropped_reason)
    external_id = email.message_id or fallback_message_id
    ticket = _to_support_address(email, external_id)
    if ticket is not None:
        return ticket
    target = next((t for t in map(resolve_recipient, email.recipients) if t is not None), None)
    if target is None:
        return _dropped("unroutable")
    with UnitOfWork() as uow:
        thread = _thread_for(uow.connection, target)
        if thread is None:
            return _dropped("unroutable")
        outcome = record_inbound(uow, thread, email, external_id)
        if outcome.outcome == "recorded" and target.kind is AddressKind.LEAD:
            mark_contacted(uow, system_actor(thread["organization_id"]), target.id)
        uow.commit()
    logger.info(
        "inbound email",
        extra={
            "outcome": outcome.outcome,
            "conversationId": str(outcome.conversation_id),
            "messageId": str(outcome.message_id),
        },  # fmt: skip
    )
    return outcome


def _to_support_address(email: InboundEmail, external_id: str) -> InboundOutcome | None:
    """Mail to an organization's support address (`support+<token>@…`) opens a ticket or moves the one it
    answers (tickets.email); None when no recipient is a support address."""
    if email.from_address is None:
        return None
    with UnitOfWork() as uow:
        for recipient in email.recipients:
            organization_id = organization_for_support_address(uow.connection, recipient)
            if organization_id is None:
                continue
            result = open_or_update_ticket_from_email(
                uow,
                organization_id,
                email.from_address,
                email.subject or "",
                email.reply,
                external_id,
                clock.now(),
                email.in_reply_to,
            )
            uow.commit()
            logger.info(
                "inbound email", extra={"outcome": f"ticket_{result.outcome}", "ticketId": str(result.ticket_id)}
            )
            return InboundOutcome(f"ticket_{result.outcome}")
    return None


def _thread_for(conn: Connection, target: AddressTarget) -> dict[str, Any] | None:
    """The thread the address names, locked; a lead-keyed address finds or creates the lead's email thread
    in the lead's own organization."""
    if target.kind is AddressKind.CONVERSATION:
        row = (
            conn.execute(select(conversations).where(conversations.c.id == target.id).with_for_update())
            .mappings()
            .first()
        )
        return dict(row) if row else None
    organization_id = conn.execute(select(leads.c.organization_id).where(leads.c.id == target.id)).scalar_one_or_none()
    if organization_id is None:  # erased since the mail was sent
        return None
    thread, _ = find_or_create_thread(conn, organization_id, Channel.EMAIL, lead_id=target.id)
    conn.execute(select(conversations.c.id).where(conversations.c.id == thread["id"]).with_for_update())
    return thread


def record_inbound(uow: UnitOfWork, thread: dict[str, Any], email: InboundEmail, external_id: str) -> InboundOutcome:
    """recordInbound for a mail (conversations.inbound.record_inbound_message)."""
    message_id = record_inbound_message(
        uow,
        thread,
        external_id=external_id,
        body=email.reply,
        subject=email.subject,
        from_address=email.from_address,
        in_reply_to=email.in_reply_to,
    )
    if message_id is None:
        return InboundOutcome("duplicate", conversation_id=thread["id"])
    return InboundOutcome("recorded", conversation_id=thread["id"], message_id=message_id)


def _dropped(reason: str) -> InboundOutcome:
    logger.warning("inbound email dropped", extra={"reason": reason, "metric": DROPPED_METRIC})
    try:
        with single_metric(name=DROPPED_METRIC, unit=MetricUnit.Count, value=1, namespace=METRICS_NAMESPACE) as metric:
            metric.add_dimension(name="reason", value=reason)
    except Exception:  # counting must never fail the message
        logger.warning("metric not emitted", extra={"metric": DROPPED_METRIC})
    return InboundOutcome(reason)
