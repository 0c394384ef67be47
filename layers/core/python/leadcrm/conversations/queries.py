"""Conversations' reads: a thread, the inbox (filtered, keyset-paged), a thread's messages and a bulk email's
recipients."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    case,
    func,
    literal,
    select,
    tuple_,
)

from leadcrm.conversations.rules.messages import (
    Channel,
    ConversationStatus,
    KeysetCursor,
)
from leadcrm.conversations.tables import bulk_email_jobs, bulk_email_recipients, conversation_messages, conversations
from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import memberships, users
from leadcrm.leads.tables import leads
from leadcrm.platform.assignee import Assignee
from leadcrm.platform.db.filters import assignee_condition
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import parse_uuid
from leadcrm.platform.keyset import decode_keyset, encode_keyset
from leadcrm.platform.paging import DEFAULT_PAGE_SIZE


def thread_not_found() -> NotFound:
    return NotFound("Conversation not found.", code="CONVERSATION_NOT_FOUND")

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
        raise thread_not_found()
    return dict(row)

@dataclass(frozen=True)
class InboxFilters:
    status: ConversationStatus | None = None
    assignee: Assignee | None = None
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
    if filters.assignee is not None:
        conditions.append(assignee_condition(conversations.c.assigned_to_user_id, filters.assignee))
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
    lock_or_read_thread(conn, organization_id, conversation_id, lock=False)
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


def lock_or_read_thread(
    conn: Connection, organization_id: uuid.UUID, conversation_id: uuid.UUID, *, lock: bool = True
) -> dict[str, Any]:
    query = select(conversations).where(
        conversations.c.organization_id == organization_id, conversations.c.id == conversation_id
    )
    if lock:
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    if row is None:
        raise thread_not_found()
    return dict(row)


# -- a bulk email's recipients ------------------------------------------------------------------------------

RECIPIENT_COLUMNS = (
    bulk_email_recipients.c.lead_id,
    bulk_email_recipients.c.status,
    bulk_email_recipients.c.skip_reason,
    bulk_email_recipients.c.provider_message_id,
    bulk_email_recipients.c.error,
    bulk_email_recipients.c.sent_at,
    bulk_email_recipients.c.delivery_status,
    bulk_email_recipients.c.delivery_status_at,
    bulk_email_recipients.c.delivery_detail,
)


def list_bulk_recipients(
    conn: Connection,
    organization_id: uuid.UUID,
    job_id: uuid.UUID,
    *,
    status: str | None = None,
    delivery_status: str | None = None,
    limit: int = DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
) -> Page:
    """One bulk email's recipients with their send and delivery status, by lead id (keyset), in one
    statement; 404 BULK_EMAIL_NOT_FOUND for another organization's job."""
    job = conn.execute(
        select(bulk_email_jobs.c.id).where(
            bulk_email_jobs.c.organization_id == organization_id, bulk_email_jobs.c.id == job_id
        )
    ).first()
    if job is None:
        raise NotFound("Bulk email not found.", code="BULK_EMAIL_NOT_FOUND")
    conditions: list[ColumnElement[bool]] = [bulk_email_recipients.c.job_id == job_id]
    if status is not None:
        conditions.append(bulk_email_recipients.c.status == status)
    if delivery_status is not None:
        conditions.append(bulk_email_recipients.c.delivery_status == delivery_status)
    if cursor is not None:
        (after,) = decode_keyset(cursor, 1)
        after_id = parse_uuid(after)
        if after_id is None:
            raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
        conditions.append(bulk_email_recipients.c.lead_id > after_id)
    rows = conn.execute(
        select(*RECIPIENT_COLUMNS, leads.c.name.label("lead_name"))
        .select_from(bulk_email_recipients.join(leads, leads.c.id == bulk_email_recipients.c.lead_id))
        .where(*conditions)
        .order_by(bulk_email_recipients.c.lead_id)
        .limit(limit + 1)
    ).mappings().all()
    items = [dict(r) for r in rows[:limit]]
    next_cursor = encode_keyset([str(items[-1]["lead_id"])]) if len(rows) > limit else None
    return Page(items=items, next_cursor=next_cursor)
