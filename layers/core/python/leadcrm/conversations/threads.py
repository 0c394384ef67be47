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

Between 1 and 2 the send is claimed (`send_attempts`, committed): a message left `queued` (the function died
between 1 and 3) is resolved by the queued sweep (conversations.queued_sweep): retried once when it was
never claimed, else `unknown` unless an SES event proves SES took it. Never mailed twice: a duplicate mail is
worse than a visible unsent one.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    Connection,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.conversations import consent
from leadcrm.conversations.queries import MESSAGE_COLUMNS, get_thread, lock_or_read_thread, thread_not_found
from leadcrm.conversations.rules.messages import (
    Channel,
    ConversationStatus,
    Direction,
    MessageStatus,
    lead_contact_key,
    member_contact_key,
)
from leadcrm.conversations.tables import conversation_messages, conversations
from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import is_active_member
from leadcrm.directory.tables import memberships
from leadcrm.platform.adapters import ses
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)


Sender = Callable[[ses.OutboundMail], str]  # the mail → the provider's message id


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


# -- read, assign, status, notes ---------------------------------------------------------------------------


def mark_read(conn: Connection, actor: Actor, conversation_id: uuid.UUID) -> dict[str, Any]:
    found = conn.execute(
        update(conversations)
        .where(conversations.c.organization_id == actor.organization_id, conversations.c.id == conversation_id)
        .values(unread_count=0)
        .returning(conversations.c.id)
    ).first()
    if found is None:
        raise thread_not_found()
    return get_thread(conn, actor.organization_id, conversation_id)


def require_active_member(conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """400 ASSIGNEE_NOT_MEMBER unless the user is an active member here (any role); never says who they are."""
    if not is_active_member(conn, organization_id, user_id):
        raise BadRequest("The assignee must be an active member of this organization.", code="ASSIGNEE_NOT_MEMBER")


def assign(conn: Connection, actor: Actor, conversation_id: uuid.UUID, user_id: uuid.UUID | None) -> dict[str, Any]:
    lock_or_read_thread(conn, actor.organization_id, conversation_id)
    if user_id is not None:
        require_active_member(conn, actor.organization_id, user_id)
    conn.execute(
        update(conversations)
        .where(conversations.c.id == conversation_id)
        .values(assigned_to_user_id=user_id, updated_at=sql_now())
    )
    return get_thread(conn, actor.organization_id, conversation_id)


def set_status(
    conn: Connection, actor: Actor, conversation_id: uuid.UUID, status: ConversationStatus
) -> dict[str, Any]:
    lock_or_read_thread(conn, actor.organization_id, conversation_id)
    conn.execute(
        update(conversations)
        .where(conversations.c.id == conversation_id)
        .values(status=status.value, updated_at=sql_now())
    )
    return get_thread(conn, actor.organization_id, conversation_id)


def add_note(conn: Connection, actor: Actor, conversation_id: uuid.UUID, body: str) -> dict[str, Any]:
    """An internal note: never sent, never gated (spec: internal manual notes are never gated)."""
    thread = lock_or_read_thread(conn, actor.organization_id, conversation_id)
    return insert_message(
        conn,
        thread,
        direction=Direction.NOTE,
        status=MessageStatus.NOTE,
        body=body,
        author_user_id=actor.user_id,
    )


def insert_message(conn: Connection, thread: dict[str, Any], **values: Any) -> dict[str, Any]:
    for name in ("direction", "status"):
        values[name] = values[name].value
    values.setdefault("id", uuid7())  # a sender names the id first: its mail's SES tag carries it
    row = (
        conn.execute(
            insert(conversation_messages)
            .values(
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
        .values(last_message_at=sql_now(), updated_at=sql_now())
    )
    return dict(row)


# -- sending email ---------------------------------------------------------------------------------------


