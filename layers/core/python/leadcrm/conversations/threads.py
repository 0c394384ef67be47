"""Conversations (staff inbox): threads, messages, sending email, internal notes, read and assign.

A thread is one per (organization, channel, contact), found or created with INSERT … ON CONFLICT on that
key, for a lead (`lead:<id>`) or a member (`member:<membership id>`).

Sending an email (spec G9) runs in two transactions around the SES call, so an SES outage never holds a
database transaction open and never loses the message:

1. `queue_email`: under the thread's row lock, the gate (lead consent on email → 403 LEAD_CHANNEL_BLOCKED;
   a member's explicit `newMessage.email: false` → 403 MEMBER_EMAIL_OPTED_OUT), both before the insert;
   then the subject (the thread's stored one with "Re:"; for the first message its own, or for a blank
   one the default in the contact's language, stored once it is sent), In-Reply-To/References to the
   contact's last inbound message, the signed Reply-To, and the message row as `queued`. Committed before
   SES is called.
2. `deliver`: one SES call (raw MIME, the thread's headers).
3. `record_delivery`: `sent` with the SES message id (leads.last_outbound_at, last_contact_attempt_at and,
   for a staff sender, the first first_human_response_at stamped; a new lead moved to
   contacted, best-effort), or `failed` with the error, and nothing else changed (spec "Notification
   fails": the failure is kept and shown in the thread and on the lead's timeline).

A message left `queued` (the function died between 1 and 3) is visible as such; it is not re-sent, as a
duplicate mail is worse than a visible unsent one.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    case,
    func,
    insert,
    literal,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.conversations import consent
from leadcrm.conversations.rules.messages import (
    Channel,
    ConversationStatus,
    Direction,
    KeysetCursor,
    MessageStatus,
    lead_contact_key,
    member_contact_key,
    member_email_opted_out,
    plan_subject,
)
from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, reply_address
from leadcrm.conversations.tables import conversation_messages, conversations
from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import is_active_member
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.leads.moves import LeadUpdate, lock_lead, update_lead
from leadcrm.leads.tables import leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.platform import mail_keys
from leadcrm.platform.adapters import ses
from leadcrm.platform.adapters.aws import error_code
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Forbidden, NotFound
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

MAX_ERROR_LENGTH = 500
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100

Sender = Callable[[ses.OutboundMail], str]  # the mail → the provider's message id


def _not_found() -> NotFound:
    return NotFound("Conversation not found.", code="CONVERSATION_NOT_FOUND")


# -- finding or creating a thread ------------------------------------------------------------------------


def find_or_create_thread(
    conn: Connection,
    organization_id: uuid.UUID,
    channel: Channel,
    *,
    lead_id: uuid.UUID | None = None,
    membership_id: uuid.UUID | None = None,
) -> tuple[dict[str, Any], bool]:
    """The thread of the contact on the channel, made when there is none; (row, created). Idempotent and
    race-safe: two concurrent calls get the same thread. The caller has checked the contact is in the org."""
    key = lead_contact_key(lead_id) if lead_id is not None else member_contact_key(membership_id)  # type: ignore[arg-type]
    created = (
        conn.execute(
            pg_insert(conversations)
            .values(
                id=uuid7(),
                organization_id=organization_id,
                channel=channel.value,
                contact_key=key,
                lead_id=lead_id,
                membership_id=membership_id,
            )
            .on_conflict_do_nothing(index_elements=["organization_id", "channel", "contact_key"])
            .returning(*conversations.c)
        )
        .mappings()
        .first()
    )
    if created is not None:
        return dict(created), True
    row = (
        conn.execute(
            select(conversations).where(
                conversations.c.organization_id == organization_id,
                conversations.c.channel == channel.value,
                conversations.c.contact_key == key,
            )
        )
        .mappings()
        .one()
    )
    return dict(row), False


def require_member(conn: Connection, organization_id: uuid.UUID, membership_id: uuid.UUID) -> None:
    found = conn.execute(
        select(memberships.c.id).where(
            memberships.c.organization_id == organization_id,
            memberships.c.id == membership_id,
            memberships.c.deleted_at.is_(None),
        )
    ).first()
    if found is None:
        raise NotFound("Member not found.", code="MEMBER_NOT_FOUND")


def open_thread(
    conn: Connection,
    actor: Actor,
    channel: Channel,
    *,
    lead_id: uuid.UUID | None = None,
    membership_id: uuid.UUID | None = None,
) -> tuple[dict[str, Any], bool]:
    if lead_id is not None:
        consent.require_lead(conn, actor.organization_id, lead_id)
    else:
        assert membership_id is not None
        require_member(conn, actor.organization_id, membership_id)
    return find_or_create_thread(conn, actor.organization_id, channel, lead_id=lead_id, membership_id=membership_id)


# -- reading ---------------------------------------------------------------------------------------------


def _contact_name() -> ColumnElement:
    member_user = users.alias("member_user")
    member_name = (
        select(func.nullif(func.trim(func.concat_ws(" ", member_user.c.first_name, member_user.c.last_name)), ""))
        .select_from(memberships.join(member_user, member_user.c.id == memberships.c.user_id))
        .where(memberships.c.id == conversations.c.membership_id)
        .scalar_subquery()
    )
    lead_name = select(leads.c.name).where(leads.c.id == conversations.c.lead_id).scalar_subquery()
    return case((conversations.c.lead_id.is_not(None), lead_name), else_=member_name)


def _last_message() -> Any:
    return (
        select(
            func.jsonb_build_object(
                "direction",
                conversation_messages.c.direction,
                "status",
                conversation_messages.c.status,
                "preview",
                func.left(conversation_messages.c.body, 140),
                "at",
                conversation_messages.c.created_at,
            )
        )
        .where(conversation_messages.c.conversation_id == conversations.c.id)
        .order_by(conversation_messages.c.created_at.desc(), conversation_messages.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )


def _thread_select() -> Any:
    assignee = users.alias("assignee")
    assignee_name = (
        select(func.nullif(func.trim(func.concat_ws(" ", assignee.c.first_name, assignee.c.last_name)), ""))
        .where(assignee.c.id == conversations.c.assigned_to_user_id)
        .scalar_subquery()
    )
    return select(
        *conversations.c,
        _contact_name().label("contact_name"),
        assignee_name.label("assignee_name"),
        _last_message().label("last_message"),
    )


def get_thread(conn: Connection, organization_id: uuid.UUID, conversation_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            _thread_select().where(
                conversations.c.organization_id == organization_id, conversations.c.id == conversation_id
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise _not_found()
    return dict(row)


@dataclass(frozen=True)
class InboxFilters:
    status: ConversationStatus | None = None
    assigned_to_me: bool = False
    unassigned: bool = False
    unread_only: bool = False
    lead_id: uuid.UUID | None = None
    channel: Channel | None = None
    limit: int = DEFAULT_PAGE_SIZE
    after: KeysetCursor | None = None


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None


def list_inbox(conn: Connection, actor: Actor, filters: InboxFilters) -> Page:
    """The organization's threads, newest activity first, in one statement (keyset on last_message_at, id)."""
    conditions: list[ColumnElement[bool]] = [conversations.c.organization_id == actor.organization_id]
    if filters.status is not None:
        conditions.append(conversations.c.status == filters.status.value)
    if filters.assigned_to_me:
        conditions.append(conversations.c.assigned_to_user_id == actor.user_id)
    if filters.unassigned:
        conditions.append(conversations.c.assigned_to_user_id.is_(None))
    if filters.unread_only:
        conditions.append(conversations.c.unread_count > 0)
    if filters.lead_id is not None:
        conditions.append(conversations.c.lead_id == filters.lead_id)
    if filters.channel is not None:
        conditions.append(conversations.c.channel == filters.channel.value)
    if filters.after is not None:
        conditions.append(
            tuple_(conversations.c.last_message_at, conversations.c.id)
            < tuple_(
                literal(filters.after.at, conversations.c.last_message_at.type),
                literal(filters.after.id, conversations.c.id.type),
            )
        )
    rows = [
        dict(r)
        for r in conn.execute(
            _thread_select()
            .where(*conditions)
            .order_by(conversations.c.last_message_at.desc(), conversations.c.id.desc())
            .limit(filters.limit + 1)
        ).mappings()
    ]
    items = rows[: filters.limit]
    next_cursor = None
    if len(rows) > filters.limit:
        next_cursor = KeysetCursor(at=items[-1]["last_message_at"], id=items[-1]["id"]).encode()
    return Page(items=items, next_cursor=next_cursor)


MESSAGE_COLUMNS = tuple(
    c for c in conversation_messages.c if c.name not in ("from_address", "to_address", "in_reply_to")
)


def list_messages(
    conn: Connection, organization_id: uuid.UUID, conversation_id: uuid.UUID, limit: int, after: KeysetCursor | None
) -> Page:
    """One thread's messages, newest first (keyset on created_at, id)."""
    _lock_or_read(conn, organization_id, conversation_id, lock=False)
    conditions: list[ColumnElement[bool]] = [
        conversation_messages.c.organization_id == organization_id,
        conversation_messages.c.conversation_id == conversation_id,
    ]
    if after is not None:
        conditions.append(
            tuple_(conversation_messages.c.created_at, conversation_messages.c.id)
            < tuple_(
                literal(after.at, conversation_messages.c.created_at.type),
                literal(after.id, conversation_messages.c.id.type),
            )
        )
    rows = [
        dict(r)
        for r in conn.execute(
            select(*MESSAGE_COLUMNS)
            .where(*conditions)
            .order_by(conversation_messages.c.created_at.desc(), conversation_messages.c.id.desc())
            .limit(limit + 1)
        ).mappings()
    ]
    items = rows[:limit]
    next_cursor = KeysetCursor(at=items[-1]["created_at"], id=items[-1]["id"]).encode() if len(rows) > limit else None
    return Page(items=items, next_cursor=next_cursor)


def _lock_or_read(
    conn: Connection, organization_id: uuid.UUID, conversation_id: uuid.UUID, *, lock: bool = True
) -> dict[str, Any]:
    query = select(conversations).where(
        conversations.c.organization_id == organization_id, conversations.c.id == conversation_id
    )
    if lock:
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    if row is None:
        raise _not_found()
    return dict(row)


# -- read, assign, status, notes ---------------------------------------------------------------------------


def mark_read(conn: Connection, actor: Actor, conversation_id: uuid.UUID) -> dict[str, Any]:
    found = conn.execute(
        update(conversations)
        .where(conversations.c.organization_id == actor.organization_id, conversations.c.id == conversation_id)
        .values(unread_count=0)
        .returning(conversations.c.id)
    ).first()
    if found is None:
        raise _not_found()
    return get_thread(conn, actor.organization_id, conversation_id)


def require_active_member(conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """400 ASSIGNEE_NOT_MEMBER unless the user is an active member here (any role); never says who they are."""
    if not is_active_member(conn, organization_id, user_id):
        raise BadRequest("The assignee must be an active member of this organization.", code="ASSIGNEE_NOT_MEMBER")


def assign(conn: Connection, actor: Actor, conversation_id: uuid.UUID, user_id: uuid.UUID | None) -> dict[str, Any]:
    _lock_or_read(conn, actor.organization_id, conversation_id)
    if user_id is not None:
        require_active_member(conn, actor.organization_id, user_id)
    conn.execute(
        update(conversations)
        .where(conversations.c.id == conversation_id)
        .values(assigned_to_user_id=user_id, updated_at=func.now())
    )
    return get_thread(conn, actor.organization_id, conversation_id)


def set_status(
    conn: Connection, actor: Actor, conversation_id: uuid.UUID, status: ConversationStatus
) -> dict[str, Any]:
    _lock_or_read(conn, actor.organization_id, conversation_id)
    conn.execute(
        update(conversations)
        .where(conversations.c.id == conversation_id)
        .values(status=status.value, updated_at=func.now())
    )
    return get_thread(conn, actor.organization_id, conversation_id)


def add_note(conn: Connection, actor: Actor, conversation_id: uuid.UUID, body: str) -> dict[str, Any]:
    """An internal note: never sent, never gated (spec: internal manual notes are never gated)."""
    thread = _lock_or_read(conn, actor.organization_id, conversation_id)
    return _insert_message(
        conn,
        thread,
        direction=Direction.NOTE,
        status=MessageStatus.NOTE,
        body=body,
        author_user_id=actor.user_id,
    )


def _insert_message(conn: Connection, thread: dict[str, Any], **values: Any) -> dict[str, Any]:
    for name in ("direction", "status"):
        values[name] = values[name].value
    row = (
        conn.execute(
            insert(conversation_messages)
            .values(
                id=uuid7(),
                organization_id=thread["organization_id"],
                conversation_id=thread["id"],
                channel=thread["channel"],
                **values,
            )
            .returning(*MESSAGE_COLUMNS)
        )
        .mappings()
        .one()
    )
    conn.execute(
        update(conversations)
        .where(conversations.c.id == thread["id"])
        .values(last_message_at=func.now(), updated_at=func.now())
    )
    return dict(row)


# -- sending email ---------------------------------------------------------------------------------------


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
    thread = _lock_or_read(conn, actor.organization_id, conversation_id)
    if thread["channel"] != Channel.EMAIL.value:
        raise BadRequest("Only email can be sent from this thread.", code="CHANNEL_NOT_SUPPORTED")
    contact = _contact(conn, thread)
    if contact.lead_id is not None:
        if not consent.is_allowed(conn, actor.organization_id, contact.lead_id, consent.ConsentChannel.EMAIL):
            raise Forbidden("The lead does not accept email.", code="LEAD_CHANNEL_BLOCKED", channel="email")
    elif member_email_opted_out(contact.member_prefs):
        raise Forbidden("The member opted out of message emails.", code="MEMBER_EMAIL_OPTED_OUT")
    if not contact.address:
        raise BadRequest("The contact has no email address.", code="CONTACT_HAS_NO_EMAIL")

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
    headers = {"In-Reply-To": last_inbound, "References": last_inbound} if last_inbound else {}
    mail = ses.OutboundMail(
        to_address=contact.address,
        subject=plan.subject,
        text=body,
        reply_to=reply_address(
            mail_keys.signing_key(), AddressTarget(AddressKind.CONVERSATION, thread["id"]), mail_keys.inbound_domain()
        ),
        sender_name=organization.name,
        headers=headers,
    )
    message = _insert_message(
        conn,
        thread,
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
        return Delivery(error=f"{code}: {error}"[:MAX_ERROR_LENGTH])


def record_delivery(uow: UnitOfWork, actor: Actor, queued: QueuedEmail, delivery: Delivery) -> dict[str, Any]:
    """Step 3: the outcome on the message; on success the lead's stamp and the move to contacted."""
    conn = uow.connection
    values: dict[str, Any] = (
        {
            "status": MessageStatus.SENT.value,
            "provider_message_id": delivery.provider_message_id,
            "sent_at": func.now(),
        }  # fmt: skip
        if delivery.sent
        else {"status": MessageStatus.FAILED.value, "error": delivery.error}
    )
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
        stamps: dict[str, Any] = {"last_outbound_at": func.now(), "last_contact_attempt_at": func.now()}
        if actor.user_id is not None:
            # A staff member's own email is a human response (touches.py keeps the same rule for logged
            # touches): the first one is kept, a later one never moves it.
            stamps["first_human_response_at"] = func.coalesce(leads.c.first_human_response_at, func.now())
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
    delivery = deliver(queued, send)
    with UnitOfWork() as uow:
        message = record_delivery(uow, actor, queued, delivery)
        thread = get_thread(uow.connection, actor.organization_id, queued.conversation_id)
        if on_recorded is not None:
            on_recorded(uow.connection, thread, message)
        uow.commit()
    return thread, message
