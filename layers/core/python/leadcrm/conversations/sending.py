"""Sending email on a thread: queue the message (consent and suppression checked, a signed reply address),
deliver it through SES outside the transaction, then record the delivery; a staff member's sent email is the
lead's first human response and a contact attempt, a failed send is neither."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    case,
    func,
    select,
    update,
)

from leadcrm.conversations import consent
from leadcrm.conversations.queries import MESSAGE_COLUMNS, get_thread, lock_or_read_thread
from leadcrm.conversations.rules.delivery import MAIL_TAG, MailRef
from leadcrm.conversations.rules.messages import (
    Channel,
    Direction,
    MessageStatus,
    member_email_opted_out,
    plan_subject,
)
from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, reply_address
from leadcrm.conversations.tables import conversation_messages, conversations
from leadcrm.conversations.threads import Sender, insert_message
from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.leads.moves import LeadUpdate, lock_lead, update_lead
from leadcrm.leads.tables import leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.platform import mail_keys
from leadcrm.platform.adapters import ses
from leadcrm.platform.adapters.aws import error_code
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Forbidden
from leadcrm.platform.failures import refused_for_now
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

MAX_ERROR_LENGTH = 500
# How long a message SES refused for now (throttled, unavailable) stays queued for the queued sweep's
# retries; a refusal after that fails it, so nothing waits for ever.
RETRY_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class QueuedEmail:
    """A message committed as queued, and the mail to send for it."""

    message: dict[str, Any]
    mail: ses.OutboundMail
    conversation_id: uuid.UUID
    lead_id: uuid.UUID | None
    # The subject the thread keeps once this first message is sent (a failed one stores nothing, so a
    # retry is not a "Re:" to a mail the contact never got).
    store_subject: str | None = None


@dataclass(frozen=True)
class Contact:
    address: str | None
    locale: str | None
    lead_id: uuid.UUID | None = None
    member_prefs: Any = field(default=None)


def queue_email(
    conn: Connection, actor: Actor, conversation_id: uuid.UUID, body: str, subject: str | None
) -> QueuedEmail:
    """Step 1 (see the module docstring): gate, compose, insert `queued`. The caller commits."""
    thread = lock_or_read_thread(conn, actor.organization_id, conversation_id)
    if thread["channel"] != Channel.EMAIL.value:
        raise BadRequest("Only email can be sent from this thread.", code="CHANNEL_NOT_SUPPORTED")
    contact = gated_contact(conn, thread)

    organization = conn.execute(
        select(organizations.c.name, organizations.c.locale).where(organizations.c.id == actor.organization_id)
    ).one()
    plan = plan_subject(thread["subject"], subject, organization.name, contact.locale, organization.locale)
    last_inbound = conn.execute(
        select(conversation_messages.c.external_message_id)
        .where(
            conversation_messages.c.conversation_id == thread["id"],
            conversation_messages.c.direction == Direction.INBOUND.value,
            conversation_messages.c.external_message_id.is_not(None),
        )
        .order_by(conversation_messages.c.created_at.desc(), conversation_messages.c.id.desc())
        .limit(1)
    ).scalar_one_or_none()
    message_id = uuid7()
    assert contact.address is not None  # gated_contact refuses a contact without one
    mail = compose_mail(
        message_id=message_id,
        conversation_id=thread["id"],
        to_address=contact.address,
        subject=plan.subject,
        body=body,
        organization_name=organization.name,
        in_reply_to=last_inbound,
    )
    message = insert_message(
        conn,
        thread,
        id=message_id,
        direction=Direction.OUTBOUND,
        status=MessageStatus.QUEUED,
        body=body,
        subject=plan.subject,
        author_user_id=actor.user_id,
        to_address=contact.address,
        in_reply_to=last_inbound,
    )
    return QueuedEmail(
        message=message,
        mail=mail,
        conversation_id=thread["id"],
        lead_id=contact.lead_id,
        store_subject=plan.store,
    )


def gated_contact(conn: Connection, thread: dict[str, Any]) -> Contact:
    """The thread's contact, if it may be mailed now: a lead whose email is revoked (by staff, an
    unsubscribe, a bounce or a complaint) → 403 LEAD_CHANNEL_BLOCKED; a member who opted out → 403
    MEMBER_EMAIL_OPTED_OUT; no address → 400 CONTACT_HAS_NO_EMAIL."""
    contact = _contact(conn, thread)
    if contact.lead_id is not None:
        if not consent.is_allowed(conn, thread["organization_id"], contact.lead_id, consent.ConsentChannel.EMAIL):
            raise Forbidden("The lead does not accept email.", code="LEAD_CHANNEL_BLOCKED", channel="email")
    elif member_email_opted_out(contact.member_prefs):
        raise Forbidden("The member opted out of message emails.", code="MEMBER_EMAIL_OPTED_OUT")
    if not contact.address:
        raise BadRequest("The contact has no email address.", code="CONTACT_HAS_NO_EMAIL")
    return contact


def compose_mail(
    *,
    message_id: uuid.UUID,
    conversation_id: uuid.UUID,
    to_address: str,
    subject: str,
    body: str,
    organization_name: str,
    in_reply_to: str | None,
) -> ses.OutboundMail:
    """The mail of one outbound message: the thread's signed Reply-To, the organization as sender name,
    In-Reply-To/References to the contact's last message, and the SES tag naming the message."""
    headers = {"In-Reply-To": in_reply_to, "References": in_reply_to} if in_reply_to else {}
    return ses.OutboundMail(
        to_address=to_address,
        subject=subject,
        text=body,
        reply_to=reply_address(
            mail_keys.signing_key(),
            AddressTarget(AddressKind.CONVERSATION, conversation_id),
            mail_keys.inbound_domain(),
        ),
        sender_name=organization_name,
        headers=headers,
        tags={MAIL_TAG: MailRef.conversation(message_id).tag_value()},
    )


def _contact(conn: Connection, thread: dict[str, Any]) -> Contact:
    if thread["lead_id"] is not None:
        lead = conn.execute(select(leads.c.email, leads.c.locale).where(leads.c.id == thread["lead_id"])).one()
        return Contact(address=lead.email, locale=lead.locale, lead_id=thread["lead_id"])
    member = conn.execute(
        select(users.c.email, memberships.c.notification_prefs)
        .select_from(memberships.join(users, users.c.id == memberships.c.user_id))
        .where(memberships.c.id == thread["membership_id"])
    ).one()
    return Contact(address=member.email, locale=None, member_prefs=member.notification_prefs)


@dataclass(frozen=True)
class Delivery:
    provider_message_id: str | None = None
    error: str | None = None
    # SES answered "not now" (refused_for_now): it did not take the mail, so the message stays queued with
    # its claim released, and the queued sweep sends it again (conversations.queued_sweep).
    retry: bool = False

    @property
    def sent(self) -> bool:
        return self.error is None


def deliver(queued: QueuedEmail, send: Sender | None = None) -> Delivery:
    """Step 2: the SES call. An error is the outcome, never raised (the message is already saved)."""
    try:
        return Delivery(provider_message_id=(send or ses.send_mime)(queued.mail))
    except Exception as error:
        code = error_code(error)
        logger.warning(
            "email not sent",
            extra={
                "messageId": str(queued.message["id"]),
                "conversationId": str(queued.conversation_id),
                "errorCode": code,
            },  # fmt: skip
        )
        return Delivery(error=f"{code}: {error}"[:MAX_ERROR_LENGTH], retry=refused_for_now(error))


def record_delivery(uow: UnitOfWork, actor: Actor, queued: QueuedEmail, delivery: Delivery) -> dict[str, Any]:
    """Step 3: the outcome on the message; on success the lead's stamp and the move to contacted."""
    conn = uow.connection
    # SES's own word that it took the mail always wins. A failure is recorded only over `queued`: an SES event
    # that proved the mail was taken (the call timed out after SES accepted it) has already made it `sent`.
    still_queued = conversation_messages.c.status == MessageStatus.QUEUED.value
    values: dict[str, Any] = (
        {
            "status": MessageStatus.SENT.value,
            "provider_message_id": delivery.provider_message_id,
            "sent_at": func.coalesce(conversation_messages.c.sent_at, sql_now()),
            "error": None,
        }  # fmt: skip
        if delivery.sent
        else {
            "status": case((still_queued, MessageStatus.FAILED.value), else_=conversation_messages.c.status),
            "error": case((still_queued, delivery.error), else_=conversation_messages.c.error),
        }
    )
    if delivery.retry:
        # SES did not take it: queued again, the claim released (send_attempts back to 0, which the sweep
        # reads as "never reached SES"), the error saying why; failed once the retry window is spent.
        retried = and_(still_queued, conversation_messages.c.created_at >= sql_now() - RETRY_WINDOW)
        values["status"] = case((retried, MessageStatus.QUEUED.value), else_=values["status"])
        values["send_attempts"] = case((retried, 0), else_=conversation_messages.c.send_attempts)
    message = (
        conn.execute(
            update(conversation_messages)
            .where(conversation_messages.c.id == queued.message["id"])
            .values(**values)
            .returning(*MESSAGE_COLUMNS)
        )
        .mappings()
        .one()
    )
    if delivery.sent and queued.store_subject is not None:
        conn.execute(
            update(conversations)
            .where(conversations.c.id == queued.conversation_id)
            .values(subject=func.coalesce(conversations.c.subject, queued.store_subject))
        )
    if delivery.sent and queued.lead_id is not None:
        stamps: dict[str, Any] = {"last_outbound_at": sql_now(), "last_contact_attempt_at": sql_now()}
        if actor.user_id is not None:
            # A staff member's own email is a human response (touches.py keeps the same rule for logged
            # touches): the first one is kept, a later one never moves it.
            stamps["first_human_response_at"] = func.coalesce(leads.c.first_human_response_at, sql_now())
        conn.execute(
            update(leads)
            .where(leads.c.organization_id == actor.organization_id, leads.c.id == queued.lead_id)
            .values(**stamps)
        )
        mark_contacted(uow, actor, queued.lead_id)
    return dict(message)


def mark_contacted(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID) -> bool:
    """new → contacted through the lead move service (status event, stage_moved, lead.status_changed).
    Best-effort: a failure is logged and rolled back to a savepoint, never failing what called it."""
    conn = uow.connection
    try:
        with conn.begin_nested():
            row = lock_lead(conn, actor.organization_id, lead_id)
            if row["status"] != StageCategory.NEW.value:
                return False
            update_lead(uow, actor, lead_id, LeadUpdate(status=StageCategory.CONTACTED), locked=row)
            return True
    except Exception:
        logger.exception("lead not marked contacted", extra={"leadId": str(lead_id)})
        return False


def complete_send(
    actor: Actor,
    queued: QueuedEmail,
    *,
    send: Sender | None = None,
    on_recorded: Callable[[Connection, dict[str, Any], dict[str, Any]], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Steps 2 and 3 after the caller committed step 1: (thread after, message after). `on_recorded` runs in
    the outcome's transaction (the API stores an Idempotency-Key's answer there)."""
    if not claim_send(queued.message["id"]):
        # Someone else holds the send (the queued sweep): its outcome is theirs to record; show it as it is.
        with UnitOfWork() as uow:
            return (
                get_thread(uow.connection, actor.organization_id, queued.conversation_id),
                read_message(uow.connection, queued.message["id"]),
            )
    delivery = deliver(queued, send)
    with UnitOfWork() as uow:
        message = record_delivery(uow, actor, queued, delivery)
        thread = get_thread(uow.connection, actor.organization_id, queued.conversation_id)
        if on_recorded is not None:
            on_recorded(uow.connection, thread, message)
        uow.commit()
    return thread, message


def claim_send(message_id: uuid.UUID) -> bool:
    """The send claim, committed before SES is called: True for the one caller that may send this message.
    A compare-and-set on `send_attempts`, so the API and the queued sweep can never both send it; a claimed
    message that stays queued may have reached SES and is never sent again (conversations.queued_sweep)."""
    with UnitOfWork() as uow:
        claimed = uow.connection.execute(
            update(conversation_messages)
            .where(
                conversation_messages.c.id == message_id,
                conversation_messages.c.status == MessageStatus.QUEUED.value,
                conversation_messages.c.send_attempts == 0,
            )
            .values(send_attempts=conversation_messages.c.send_attempts + 1, send_claimed_at=sql_now())
            .returning(conversation_messages.c.id)
        ).first()
        uow.commit()
    return claimed is not None


def read_message(conn: Connection, message_id: uuid.UUID) -> dict[str, Any]:
    query = select(*MESSAGE_COLUMNS).where(conversation_messages.c.id == message_id)
    return dict(conn.execute(query).mappings().one())
