"""WhatsApp conversations (Cloud API): inbound messages into the lead's thread, outbound text and templates,
and the status webhooks of what was sent. The connection (which number belongs to which organization) is
ingestion's: its callers (leadcrm.ingestion.whatsapp, the API) route first and pass the organization and the
organization's connected numbers in.

- Inbound (`record_inbound`): a message from a known lead's number lands in the lead's WhatsApp thread
  through the shared recordInbound (conversations.inbound: idempotent on the wamid, unread + 1, re-open,
  `conversation.inbound_received`). A number that is no lead's records nothing (organic messages create no
  lead; click-to-WhatsApp referrals have made theirs before this runs).
- Outbound, like email in steps around the provider call (conversations.sending), but the provider is
  reached from outside the VPC (graph_fetch): `queue_message` gates (consent `whatsapp` → 403
  LEAD_CHANNEL_BLOCKED; free-form outside the 24-hour window → 409 WHATSAPP_WINDOW_CLOSED naming when it
  closed; a template must be an approved synced one with its parameters) and inserts the message `queued`;
  the caller commits and puts the send on the graph-fetch queue; graph_fetch calls Graph and queues the
  outcome for ingestion, which calls `record_send_result`: `sent` with the wamid (the lead stamped and moved
  to contacted, as for email) or `failed` with Graph's error.
- Statuses (`apply_status`): each (wamid, status) is kept once in whatsapp_status_events and the message's
  `delivery_status` is the highest seen (conversations.rules.whatsapp), so any order of arrival ends the
  same; a status that arrives before its send was recorded is held there and folded in by
  `record_send_result`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, case, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.conversations import consent
from leadcrm.conversations.queries import MESSAGE_COLUMNS, get_thread, lock_or_read_thread
from leadcrm.conversations.rules import whatsapp as rules
from leadcrm.conversations.rules.messages import Channel, Direction, MessageStatus
from leadcrm.conversations.sending import mark_contacted
from leadcrm.conversations.tables import (
    conversation_messages,
    conversations,
    whatsapp_status_events,
    whatsapp_templates,
)
from leadcrm.conversations.threads import insert_message
from leadcrm.directory.rules import Actor, system_actor
from leadcrm.leads.identity import organization_region
from leadcrm.leads.tables import leads
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict, Forbidden, NotFound
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

MAX_ERROR_LENGTH = 500


# -- inbound -----------------------------------------------------------------------------------------------


# -- statuses -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusUpdate:
    wamid: str
    status: rules.WhatsAppStatus
    occurred_at: datetime
    errors: tuple[dict[str, Any], ...] = ()


def _rank(column: Any) -> Any:
    return case(
        *((column == status.value, rank) for status, rank in rules.STATUS_RANK.items()),
        else_=0,
    )


def apply_status(conn: Connection, organization_id: uuid.UUID, status: StatusUpdate) -> bool:
    """Keep the status once and move the message to it when it is higher than its current one. False
    for a replay (nothing written). A status of a message not recorded yet is held (folded in later)."""
    kept = conn.execute(
        pg_insert(whatsapp_status_events)
        .values(
            wamid=status.wamid,
            status=status.status.value,
            organization_id=organization_id,
            occurred_at=status.occurred_at,
            error={"errors": list(status.errors)} if status.errors else None,
        )
        .on_conflict_do_nothing(index_elements=["wamid", "status"])
        .returning(whatsapp_status_events.c.wamid)
    ).first()
    if kept is None:
        return False
    _move_message(conn, organization_id, status)
    return True


def _move_message(conn: Connection, organization_id: uuid.UUID, status: StatusUpdate) -> None:
    values: dict[str, Any] = {
        "delivery_status": status.status.value,
        "delivery_status_at": status.occurred_at,
    }
    if status.status is rules.WhatsAppStatus.FAILED:
        values["delivery_detail"] = {"errors": list(status.errors)}
        values["error"] = _error_text(status.errors)
    conn.execute(
        update(conversation_messages)
        .where(
            conversation_messages.c.organization_id == organization_id,
            conversation_messages.c.channel == Channel.WHATSAPP.value,
            conversation_messages.c.direction == Direction.OUTBOUND.value,
            conversation_messages.c.provider_message_id == status.wamid,
            _rank(conversation_messages.c.delivery_status) < rules.STATUS_RANK[status.status],
        )
        .values(**values)
    )


def _error_text(errors: Sequence[dict[str, Any]]) -> str:
    if not errors:
        return "failed"
    first = errors[0]
    return f"{first.get('code', 'unknown')}: {first.get('title') or first.get('message') or 'failed'}"[
        :MAX_ERROR_LENGTH
    ]


def _fold_held_statuses(conn: Connection, organization_id: uuid.UUID, wamid: str) -> None:
    """The statuses that arrived before the send's wamid was recorded, applied now (the highest wins)."""
    held = conn.execute(
        select(
            whatsapp_status_events.c.status, whatsapp_status_events.c.occurred_at, whatsapp_status_events.c.error
        ).where(whatsapp_status_events.c.wamid == wamid, whatsapp_status_events.c.organization_id == organization_id)
    ).all()
    best = max(held, key=lambda row: rules.status_rank(row.status), default=None)
    if best is not None:
        errors = tuple((best.error or {}).get("errors") or ())
        _move_message(
            conn, organization_id, StatusUpdate(wamid, rules.WhatsAppStatus(best.status), best.occurred_at, errors)
        )


# -- outbound -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TemplateChoice:
    name: str
    language: str
    parameters: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueuedWhatsApp:
    """A message committed as queued, and the send graph_fetch makes for it (no PII beyond the number)."""

    message: dict[str, Any]
    conversation_id: uuid.UUID
    send: dict[str, Any]


def queue_message(
    conn: Connection,
    actor: Actor,
    conversation_id: uuid.UUID,
    *,
    text: str | None,
    template: TemplateChoice | None,
    numbers: Sequence[str],
) -> QueuedWhatsApp:
    """Gate, compose and insert `queued` (see the module docstring); `numbers` are the organization's
    connected phone number ids. The caller commits, then sends."""
    thread = lock_or_read_thread(conn, actor.organization_id, conversation_id)
    if thread["channel"] != Channel.WHATSAPP.value or thread["lead_id"] is None:
        raise BadRequest("Only a lead's WhatsApp thread sends WhatsApp messages.", code="CHANNEL_NOT_SUPPORTED")
    lead_id = thread["lead_id"]
    if not consent.is_allowed(conn, actor.organization_id, lead_id, consent.ConsentChannel.WHATSAPP):
        raise Forbidden("The lead does not accept WhatsApp messages.", code="LEAD_CHANNEL_BLOCKED", channel="whatsapp")
    phone = conn.execute(select(leads.c.phone).where(leads.c.id == lead_id)).scalar_one_or_none()
    to = _international_digits(conn, actor.organization_id, phone)
    if to is None:
        raise BadRequest("The lead has no phone number WhatsApp can reach.", code="CONTACT_HAS_NO_PHONE")
    last = conn.execute(
        select(conversation_messages.c.created_at, conversation_messages.c.to_address)
        .where(
            conversation_messages.c.conversation_id == thread["id"],
            conversation_messages.c.direction == Direction.INBOUND.value,
        )
        .order_by(conversation_messages.c.created_at.desc(), conversation_messages.c.id.desc())
        .limit(1)
    ).first()
    if not numbers:
        raise Conflict("The organization has no connected WhatsApp number.", code="WHATSAPP_NOT_CONNECTED")
    # Replies go out from the number the lead wrote to, when it is still connected.
    sender = last.to_address if last is not None and last.to_address in numbers else numbers[0]
    if template is None:
        assert text is not None
        try:
            rules.check_free_form(last.created_at if last is not None else None, clock.now())
        except rules.WindowClosed as closed:
            raise _window_closed(closed.closed_at) from None
        body, values = text, {}
        send = {"type": "text", "text": text}
    else:
        components = _approved_template(conn, actor.organization_id, template)
        body = rules.render(components, template.parameters)
        values = {
            "template_name": template.name,
            "template_language": template.language,
            "template_parameters": list(template.parameters),
        }
        send = {
            "type": "template",
            "template": {"name": template.name, "language": template.language, "parameters": list(template.parameters)},
        }
    message = insert_message(
        conn,
        thread,
        direction=Direction.OUTBOUND,
        status=MessageStatus.QUEUED,
        body=body,
        author_user_id=actor.user_id,
        from_address=sender,
        to_address=to,
        **values,
    )
    return QueuedWhatsApp(
        message=message,
        conversation_id=thread["id"],
        send={
            "organizationId": str(actor.organization_id),
            "messageId": str(message["id"]),
            "phoneNumberId": sender,
            "to": to,
            **send,
        },
    )


def _window_closed(closed_at: datetime | None) -> Conflict:
    if closed_at is None:
        return Conflict(
            "The lead has not written on WhatsApp: only an approved template can be sent.",
            code="WHATSAPP_WINDOW_CLOSED",
            closedAt=None,
        )
    return Conflict(
        f"The 24-hour customer-service window closed at {closed_at.astimezone(UTC).isoformat()}: "
        "only an approved template can be sent.",
        code="WHATSAPP_WINDOW_CLOSED",
        closedAt=closed_at.astimezone(UTC).isoformat(),
    )


def _international_digits(conn: Connection, organization_id: uuid.UUID, phone: str | None) -> str | None:
    """The lead's number as WhatsApp takes it: E.164 digits without "+"."""
    from leadcrm.leads.rules.identity import normalize_phone

    e164 = normalize_phone(phone, organization_region(conn, organization_id)) if phone else None
    return e164.lstrip("+") if e164 else None


def _approved_template(conn: Connection, organization_id: uuid.UUID, choice: TemplateChoice) -> Any:
    row = conn.execute(
        select(whatsapp_templates.c.status, whatsapp_templates.c.components).where(
            whatsapp_templates.c.organization_id == organization_id,
            whatsapp_templates.c.name == choice.name,
            whatsapp_templates.c.language == choice.language,
        )
    ).first()
    if row is None:
        raise NotFound("No synced template has this name and language.", code="TEMPLATE_NOT_FOUND")
    if row.status != rules.APPROVED:
        raise Conflict("The template is not approved.", code="TEMPLATE_NOT_APPROVED", templateStatus=row.status)
    expected = rules.parameter_count(row.components)
    if expected != len(choice.parameters):
        raise BadRequest(
            f"The template takes {expected} parameter(s).",
            code="TEMPLATE_PARAMETERS_MISMATCH",
            expected=expected,
        )
    return row.components


def fail_queued(conn: Connection, message_id: uuid.UUID, error: str) -> dict[str, Any]:
    """The send could not be handed on (the queue refused it): `failed` with why; the message is kept."""
    row = (
        conn.execute(
            update(conversation_messages)
            .where(
                conversation_messages.c.id == message_id, conversation_messages.c.status == MessageStatus.QUEUED.value
            )
            .values(status=MessageStatus.FAILED.value, error=error[:MAX_ERROR_LENGTH])
            .returning(*MESSAGE_COLUMNS)
        )
        .mappings()
        .first()
    )
    return dict(row) if row is not None else read_message(conn, message_id)


def read_message(conn: Connection, message_id: uuid.UUID) -> dict[str, Any]:
    return dict(conn.execute(select(*MESSAGE_COLUMNS).where(conversation_messages.c.id == message_id)).mappings().one())


def record_send_result(
    uow: UnitOfWork, organization_id: uuid.UUID, message_id: uuid.UUID, *, wamid: str | None, error: str | None
) -> str:
    """What Graph said about a queued message: `sent` with its wamid (statuses held for it folded in, the
    lead stamped and moved to contacted) or `failed` with the error. Only a `queued` message moves, so a
    redelivered outcome changes nothing (`unchanged`); the first outcome wins."""
    conn = uow.connection
    values: dict[str, Any] = (
        {"status": MessageStatus.SENT.value, "provider_message_id": wamid, "sent_at": sql_now(), "error": None}
        if wamid
        else {"status": MessageStatus.FAILED.value, "error": (error or "failed")[:MAX_ERROR_LENGTH]}
    )
    row = conn.execute(
        update(conversation_messages)
        .where(
            conversation_messages.c.organization_id == organization_id,
            conversation_messages.c.id == message_id,
            conversation_messages.c.channel == Channel.WHATSAPP.value,
            conversation_messages.c.status == MessageStatus.QUEUED.value,
        )
        .values(**values)
        .returning(conversation_messages.c.conversation_id, conversation_messages.c.author_user_id)
    ).first()
    if row is None:
        return "unchanged"
    if not wamid:
        return "failed"
    _fold_held_statuses(conn, organization_id, wamid)
    lead_id = conn.execute(
        select(conversations.c.lead_id).where(conversations.c.id == row.conversation_id)
    ).scalar_one_or_none()
    if lead_id is not None:
        stamps: dict[str, Any] = {"last_outbound_at": sql_now(), "last_contact_attempt_at": sql_now()}
        if row.author_user_id is not None:  # a staff member's own message is a human response (as email)
            stamps["first_human_response_at"] = func.coalesce(leads.c.first_human_response_at, sql_now())
        conn.execute(
            update(leads).where(leads.c.organization_id == organization_id, leads.c.id == lead_id).values(**stamps)
        )
        actor = system_actor(organization_id)
        mark_contacted(uow, actor, lead_id)
    return "sent"


def thread_after(conn: Connection, organization_id: uuid.UUID, conversation_id: uuid.UUID) -> dict[str, Any]:
    return get_thread(conn, organization_id, conversation_id)


# -- templates ---------------------------------------------------------------------------------------------------


def store_templates(
    conn: Connection, organization_id: uuid.UUID, business_account_id: str, templates: Sequence[dict[str, Any]]
) -> int:
    """The account's templates as Graph listed them: upserted by (name, language); the account's templates
    Graph no longer lists are removed. How many were stored."""
    kept: list[tuple[str, str]] = []
    for template in templates:
        name, language = template.get("name"), template.get("language")
        if not isinstance(name, str) or not isinstance(language, str) or not name or not language:
            continue
        components = template.get("components") if isinstance(template.get("components"), list) else []
        values = {
            "business_account_id": business_account_id,
            "status": str(template.get("status") or "UNKNOWN")[:40],
            "category": str(template["category"])[:40] if template.get("category") else None,
            "components": components,
            "synced_at": sql_now(),
        }
        conn.execute(
            pg_insert(whatsapp_templates)
            .values(id=uuid7(), organization_id=organization_id, name=name[:512], language=language[:20], **values)
            .on_conflict_do_update(index_elements=["organization_id", "name", "language"], set_=values)
        )
        kept.append((name[:512], language[:20]))
    stale = whatsapp_templates.delete().where(
        whatsapp_templates.c.organization_id == organization_id,
        whatsapp_templates.c.business_account_id == business_account_id,
    )
    if kept:
        stale = stale.where(
            func.concat(whatsapp_templates.c.name, "\x1f", whatsapp_templates.c.language).not_in(
                [f"{n}\x1f{lang}" for n, lang in kept]
            )
        )
    conn.execute(stale)
    return len(kept)


def list_templates(conn: Connection, organization_id: uuid.UUID, status: str | None = None) -> list[dict[str, Any]]:
    query = select(whatsapp_templates).where(whatsapp_templates.c.organization_id == organization_id)
    if status is not None:
        query = query.where(whatsapp_templates.c.status == status)
    rows = conn.execute(query.order_by(whatsapp_templates.c.name, whatsapp_templates.c.language)).mappings()
    return [{**dict(r), "parameter_count": rules.parameter_count(r["components"])} for r in rows]
