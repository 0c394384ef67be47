"""The queued sweep (`queued_email_sweep`, every 5 minutes): outbound mail left `queued` because the function
that sent it died between committing it and recording what SES said, resolved without ever mailing twice.

How do we know SES did not take a message? SES cannot be asked: it has no lookup by anything we know before
the call, and SendEmail has no idempotency token. So the answer comes from what was committed around the
call (conversations.sending):

- the send claim: `send_attempts` goes from 0 to 1 in its own committed transaction just before SES is
  called, as a compare-and-set. A message still at 0 attempts once `QUEUED_LEASE` has passed was never
  handed to SES (the function died between the two commits): it is **retried once**, through the same claim
  (so the API and a sweep, or two sweeps, cannot both send it), with the consent gate checked again (a lead
  that revoked email meanwhile fails it as blocked, unsent).
- a claimed message may have reached SES (the function died during or after the call). Had SES taken it,
  its events (Send, Delivery, Bounce, …), each carrying the message's `leadcrm-mail` tag, would already
  have made it `sent` (conversations.delivery). Still queued after the lease: it becomes **`unknown`**,
  logged and shown as such in the thread and on the lead's timeline, and is never re-sent; an SES event
  that arrives later still corrects it to `sent`.
- a message SES refused for now (throttled, unavailable, credentials: conversations.sending `Delivery.retry`)
  is queued again with its claim released and the error kept: SES answered and did not take it, so it is
  **retried on every run**, without waiting for the lease, until SES takes it, refuses it for good, or
  `RETRY_WINDOW` has passed since it was queued (then failed).
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update

from leadcrm.conversations.queries import lock_or_read_thread
from leadcrm.conversations.rules.messages import Direction, MessageStatus
from leadcrm.conversations.sending import (
    Delivery,
    QueuedEmail,
    claim_send,
    compose_mail,
    deliver,
    gated_contact,
    record_delivery,
)
from leadcrm.conversations.tables import conversation_messages
from leadcrm.conversations.threads import Sender
from leadcrm.directory.rules import system_actor
from leadcrm.directory.tables import organizations
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError

logger = logging.getLogger(__name__)

JOB_NAME = "queued_email_sweep"
# Far beyond the API function's 30 s timeout: nobody is still sending a message queued this long ago.
QUEUED_LEASE = timedelta(minutes=5)
BATCH = 100
UNKNOWN_ERROR = "unknown: the send was interrupted after it may have reached SES; not re-sent"


def run_queued_email_sweep(*, send: Sender | None = None) -> dict[str, int]:
    """The scheduled job; counts only."""
    stats = {"retried": 0, "sent": 0, "failed": 0, "blocked": 0, "unknown": 0, "deferred": 0}
    with UnitOfWork() as uow:
        conn = uow.connection
        stuck = conn.execute(
            select(conversation_messages.c.id, conversation_messages.c.send_attempts)
            .where(
                conversation_messages.c.status == MessageStatus.QUEUED.value,
                conversation_messages.c.direction == Direction.OUTBOUND.value,
                or_(
                    conversation_messages.c.created_at < sql_now() - QUEUED_LEASE,
                    # refused for now by SES: its sender is done with it (a fresh queued message has no error)
                    and_(conversation_messages.c.send_attempts == 0, conversation_messages.c.error.is_not(None)),
                ),
            )
            .order_by(conversation_messages.c.created_at)
            .limit(BATCH)
            .with_for_update(skip_locked=True)
        ).all()
        unknown = [row.id for row in stuck if row.send_attempts > 0]
        if unknown:
            conn.execute(
                update(conversation_messages)
                .where(conversation_messages.c.id.in_(unknown))
                .values(status=MessageStatus.UNKNOWN.value, error=UNKNOWN_ERROR)
            )
        uow.commit()
    for message_id in unknown:
        logger.warning("queued email unknown: not re-sent", extra={"messageId": str(message_id)})
    stats["unknown"] = len(unknown)
    for row in stuck:
        if row.send_attempts == 0:
            outcome = _retry(row.id, send)
            if outcome is not None:
                stats["retried"] += 1
                stats[outcome] += 1
    return stats


def _retry(message_id: Any, send: Sender | None) -> str | None:
    """One retry of a message SES never took: `sent`, `failed`, `blocked`, `deferred` (SES refused it for
    now again), or None when another sender claimed it first."""
    with UnitOfWork() as uow:
        conn = uow.connection
        message = dict(
            conn.execute(select(conversation_messages).where(conversation_messages.c.id == message_id)).mappings().one()
        )
        actor = dataclasses.replace(system_actor(message["organization_id"]), user_id=message["author_user_id"])
        thread = lock_or_read_thread(conn, message["organization_id"], message["conversation_id"])
        blocked: Delivery | None = None
        try:
            contact = gated_contact(conn, thread)
        except AppError as refused:
            contact = None
            blocked = Delivery(error=f"{refused.code}: not sent when it was retried")
        organization_name = conn.execute(
            select(organizations.c.name).where(organizations.c.id == message["organization_id"])
        ).scalar_one()
    queued = QueuedEmail(
        message=message,
        mail=compose_mail(
            message_id=message["id"],
            conversation_id=thread["id"],
            to_address=message["to_address"] or (contact.address if contact else "") or "",
            subject=message["subject"] or "",
            body=message["body"],
            organization_name=organization_name,
            in_reply_to=message["in_reply_to"],
        ),
        conversation_id=thread["id"],
        lead_id=thread["lead_id"],
        store_subject=message["subject"] if thread["subject"] is None else None,
    )
    if not claim_send(message["id"]):
        return None
    delivery = blocked or deliver(queued, send)
    with UnitOfWork() as uow:
        recorded = record_delivery(uow, actor, queued, delivery)
        uow.commit()
    logger.info("queued email retried", extra={"messageId": str(message["id"]), "sent": delivery.sent})
    if blocked is not None:
        return "blocked"
    if delivery.sent:
        return "sent"
    return "deferred" if recorded["status"] == MessageStatus.QUEUED.value else "failed"
