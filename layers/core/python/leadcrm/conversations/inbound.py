"""recordInbound, whatever the channel: a contact's message recorded in its thread (conversations.inbound_email
for mail, conversations.whatsapp for WhatsApp).

Idempotent on (channel, external message id): the mail's Message-ID, WhatsApp's wamid. Only a new row moves
the thread: unread count + 1, re-opened, last_message_at; the lead's last_inbound_at stamped; and
`conversation.inbound_received` appended (ids only), all in the caller's unit of work.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.conversations.rules.messages import ConversationStatus, Direction, MessageStatus
from leadcrm.conversations.tables import conversation_messages, conversations
from leadcrm.leads.tables import leads
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.events import CONVERSATION_INBOUND_RECEIVED, DomainEvent
from leadcrm.platform.ids import uuid7


def record_inbound_message(
    uow: UnitOfWork,
    thread: dict[str, Any],
    *,
    external_id: str,
    body: str,
    subject: str | None = None,
    from_address: str | None = None,
    to_address: str | None = None,
    in_reply_to: str | None = None,
) -> uuid.UUID | None:
    """The new message's id, or None when this external id was recorded before (nothing written)."""
    conn = uow.connection
    message_id = conn.execute(
        pg_insert(conversation_messages)
        .values(
            id=uuid7(),
            organization_id=thread["organization_id"],
            conversation_id=thread["id"],
            direction=Direction.INBOUND.value,
            channel=thread["channel"],
            status=MessageStatus.RECEIVED.value,
            subject=subject,
            body=body,
            from_address=from_address,
            to_address=to_address,
            external_message_id=external_id,
            in_reply_to=in_reply_to,
        )
        .on_conflict_do_nothing(
            index_elements=["channel", "external_message_id"],
            index_where=(conversation_messages.c.direction == Direction.INBOUND.value)
            & conversation_messages.c.external_message_id.is_not(None),
        )
        .returning(conversation_messages.c.id)
    ).scalar_one_or_none()
    if message_id is None:
        return None
    conn.execute(
        update(conversations)
        .where(conversations.c.id == thread["id"])
        .values(
            unread_count=conversations.c.unread_count + 1,
            status=ConversationStatus.OPEN.value,
            last_message_at=sql_now(),
            updated_at=sql_now(),
        )
    )
    if thread["lead_id"] is not None:
        conn.execute(update(leads).where(leads.c.id == thread["lead_id"]).values(last_inbound_at=sql_now()))
    uow.add_event(
        DomainEvent(
            type=CONVERSATION_INBOUND_RECEIVED,
            organization_id=thread["organization_id"],
            aggregate_id=thread["id"],
            payload={
                "organizationId": str(thread["organization_id"]),
                "conversationId": str(thread["id"]),
                "leadId": str(thread["lead_id"]) if thread["lead_id"] else None,
                "messageId": str(message_id),
                "channel": thread["channel"],
            },
        )
    )
    return message_id
