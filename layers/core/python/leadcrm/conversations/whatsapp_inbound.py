"""Inbound WhatsApp messages into their leads' threads: one message (`record_inbound`) or a whole SQS batch
of them (`record_inbound_many`) in the caller's unit of work, with the rules of the shared recordInbound
(conversations.inbound): idempotent on the wamid; only a new message moves its thread (unread + 1, re-open,
last_message_at), stamps its lead's last_inbound_at and appends `conversation.inbound_received`.

A batch is set-based, a fixed number of statements whatever its size: the threads made where missing, then
locked in id order, then the messages inserted with each thread and lead updated once (one statement). A
message whose lead is not known yet (not a referral taken in with the batch) is looked up by its number first.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import (
    ARRAY,
    CompoundSelect,
    Connection,
    Integer,
    Select,
    Text,
    Uuid,
    cast,
    func,
    literal,
    select,
    true,
    update,
)

from leadcrm.conversations.rules import whatsapp as rules
from leadcrm.conversations.rules.messages import (
    Channel,
    ConversationStatus,
    Direction,
    MessageStatus,
    lead_contact_key,
)
from leadcrm.conversations.tables import conversation_messages, conversations
from leadcrm.leads.dedup import phone_key_in
from leadcrm.leads.identity import organization_region
from leadcrm.leads.rules.intake import phone_digits, same_phone
from leadcrm.leads.tables import leads
from leadcrm.platform.db.inserts import insert_skipping_conflicts
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset, recordset_document
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.events import CONVERSATION_INBOUND_RECEIVED, DomainEvent
from leadcrm.platform.ids import uuid7

RECORDED, DUPLICATE, NO_LEAD = "recorded", "duplicate", "no_lead"
CHANNEL = Channel.WHATSAPP.value


@dataclass(frozen=True)
class InboundMessage:
    """One inbound message of a webhook, routed to its organization (ids and text; no profile data)."""

    phone_number_id: str
    wamid: str
    wa_id: str
    text: str | None
    message_type: str | None = None


@dataclass(frozen=True)
class Addressed:
    """A message routed to its organization and, when already known (a referral's new lead), its lead."""

    organization_id: uuid.UUID
    message: InboundMessage
    lead_id: uuid.UUID | None = None


def lead_for_number(
    conn: Connection, organization_id: uuid.UUID, wa_id: str, regions: dict[uuid.UUID, str | None] | None = None
) -> uuid.UUID | None:
    """The organization's lead with this WhatsApp number (the same number however the lead's phone was
    typed, read in the organization's region); the one who wrote last, else the newest. The last 7 digits
    narrow the search on `ix_leads_phone_key`. `regions` caches each organization's region."""
    digits = phone_digits(wa_id)
    if digits is None or len(digits) < 7:
        return None
    candidates = conn.execute(
        select(leads.c.id, leads.c.phone)
        .where(phone_key_in(organization_id, [digits[-7:]]))
        .order_by(leads.c.last_inbound_at.desc().nulls_last(), leads.c.created_at.desc(), leads.c.id.desc())
        .limit(50)
    ).all()
    if not candidates:
        return None
    regions = {} if regions is None else regions
    if organization_id not in regions:
        regions[organization_id] = organization_region(conn, organization_id)
    international = f"+{digits}"
    return next((row.id for row in candidates if same_phone(row.phone, international, regions[organization_id])), None)


def record_inbound(uow: UnitOfWork, organization_id: uuid.UUID, message: InboundMessage) -> str:
    """The outcome: `recorded`, `duplicate` (this wamid was recorded before) or `no_lead`."""
    (outcome,) = record_inbound_many(uow, [Addressed(organization_id, message)])
    return outcome


def record_inbound_many(uow: UnitOfWork, addressed: list[Addressed]) -> list[str]:
    """Each message's outcome, in order: `recorded`, `duplicate` or `no_lead`."""
    conn = uow.connection
    regions: dict[uuid.UUID, str | None] = {}
    lead_ids = [
        item.lead_id or lead_for_number(conn, item.organization_id, item.message.wa_id, regions) for item in addressed
    ]
    rows = [
        {
            "message_id": uuid7(),
            "position": position,
            "organization_id": item.organization_id,
            "lead_id": lead_id,
            "contact_key": lead_contact_key(lead_id),
            "wamid": item.message.wamid,
            "body": rules.inbound_body(item.message.text, item.message.message_type),
            "from_address": item.message.wa_id,
            "to_address": item.message.phone_number_id,  # the number they wrote to: replies go out from it
        }
        for position, (item, lead_id) in enumerate(zip(addressed, lead_ids, strict=True))
        if lead_id is not None
    ]
    outcomes = [NO_LEAD if lead_id is None else DUPLICATE for lead_id in lead_ids]
    if not rows:
        return outcomes
    threads = _threads(conn, rows)
    recorded = _insert_messages(conn, rows, threads)
    for row in rows:
        if row["message_id"] in recorded:
            outcomes[row["position"]] = RECORDED
            thread_id = threads[(row["organization_id"], row["contact_key"])]
            uow.add_event(_inbound_received(row, thread_id))
    return outcomes


def _threads(conn: Connection, rows: list[dict]) -> dict[tuple[uuid.UUID, str], uuid.UUID]:
    """Each contact's WhatsApp thread, made where there is none, the others locked in id order (two batches
    touching the same threads queue instead of deadlocking), in one statement; by (organization, contact key).
    A thread a concurrent batch made after that statement began (it waited for that batch, then skipped the
    thread) is not in its snapshot: a second statement finds and locks it."""
    contacts = {(row["organization_id"], row["contact_key"]): row["lead_id"] for row in rows}
    wanted = {
        "contacts": recordset_document(
            [
                {"thread_id": uuid7(), "organization_id": o, "contact_key": k, "lead_id": lead}
                for (o, k), lead in contacts.items()
            ]
        )
    }
    make_or_lock, lock = _thread_statements()
    found = {(row.organization_id, row.contact_key): row.id for row in conn.execute(make_or_lock, wanted)}
    if len(found) < len(contacts):
        found.update({(row.organization_id, row.contact_key): row.id for row in conn.execute(lock, wanted)})
    return found


_CONTACT_COLUMNS = {"thread_id": Uuid, "organization_id": Uuid, "contact_key": Text, "lead_id": Uuid}
_MESSAGE_COLUMNS = {
    "message_id": Uuid, "position": Integer, "organization_id": Uuid, "conversation_id": Uuid, "wamid": Text,
    "body": Text, "from_address": Text, "to_address": Text,
}  # fmt: skip


@cache
def _thread_statements() -> tuple[CompoundSelect, Select]:
    """The threads made where missing with the others locked, and the lock alone (built once: only their
    `contacts` change)."""
    wanted = recordset("contacts", "contacts", [], _CONTACT_COLUMNS)
    made = (
        insert_skipping_conflicts(conversations, ["organization_id", "channel", "contact_key"])
        .from_select(
            ["id", "organization_id", "channel", "contact_key", "lead_id"],
            select(
                wanted.c.thread_id, wanted.c.organization_id, literal(CHANNEL, Text), wanted.c.contact_key,
                wanted.c.lead_id,
            ).order_by(wanted.c.organization_id, wanted.c.contact_key),
        )
        .returning(conversations.c.id, conversations.c.organization_id, conversations.c.contact_key)
        .cte("made")
    )  # fmt: skip
    # Each contact's thread is found by the whole (organization, channel, contact) key, one probe of the
    # unique index per contact (a LATERAL subquery it cannot flatten into a join to scan), then locked by
    # primary key in id order. Matching the batch's organizations and contacts as two arrays let the planner
    # probe by organization alone and filter the contacts: every batch read all of the organization's
    # WhatsApp threads (2,990 rows at 3,000 leads), more with every lead.
    probe = conversations.alias("probe")
    existing = (
        select(probe.c.id)
        .where(
            probe.c.organization_id == wanted.c.organization_id,
            probe.c.channel == CHANNEL,
            probe.c.contact_key == wanted.c.contact_key,
        )
        .limit(1)  # the key is unique; a LIMIT also keeps the planner from flattening the probe into a join
        .lateral("existing")
    )
    thread_ids = cast(
        select(func.array_agg(existing.c.id)).select_from(wanted).join(existing, true()).scalar_subquery(),
        ARRAY(Uuid),
    )
    lock = (
        select(conversations.c.id, conversations.c.organization_id, conversations.c.contact_key)
        .where(conversations.c.id == func.any(thread_ids))
        .order_by(conversations.c.id)
        .with_for_update(of=conversations)
    )
    locked = lock.cte("locked")  # the threads that were there when the statement began
    make_or_lock = select(made.c.id, made.c.organization_id, made.c.contact_key).union_all(
        select(locked.c.id, locked.c.organization_id, locked.c.contact_key)
    )
    return make_or_lock, lock


def _insert_messages(
    conn: Connection, rows: list[dict], threads: dict[tuple[uuid.UUID, str], uuid.UUID]
) -> dict[uuid.UUID, uuid.UUID]:
    """The new messages (a wamid recorded before writes nothing), in the batch's order, and in the same
    statement each thread with new messages moved (unread + their number, re-opened, last_message_at) and its
    lead stamped (last_inbound_at): message id → thread."""
    document = recordset_document(
        [{**row, "conversation_id": threads[(row["organization_id"], row["contact_key"])]} for row in rows]
    )
    recorded = conn.execute(_messages_statement(), {"messages": document}).all()
    return {row.id: row.conversation_id for row in recorded}


@cache
def _messages_statement() -> Select:
    """`_insert_messages`'s statement, built once: only its `messages` change."""
    document = recordset("messages", "messages", [], _MESSAGE_COLUMNS)
    inserted = (
        insert_skipping_conflicts(
            conversation_messages,
            ["channel", "external_message_id"],
            index_where=(conversation_messages.c.direction == Direction.INBOUND.value)
            & conversation_messages.c.external_message_id.is_not(None),
        )
        .from_select(
            [
                "id",
                "organization_id",
                "conversation_id",
                "direction",
                "channel",
                "status",
                "body",
                "from_address",
                "to_address",
                "external_message_id",
            ],
            select(
                document.c.message_id,
                document.c.organization_id,
                document.c.conversation_id,
                literal(Direction.INBOUND.value, Text),
                literal(CHANNEL, Text),
                literal(MessageStatus.RECEIVED.value, Text),
                document.c.body,
                document.c.from_address,
                document.c.to_address,
                document.c.wamid,
            ).order_by(document.c.position),
        )  # fmt: skip
        .returning(conversation_messages.c.id, conversation_messages.c.conversation_id)
        .cte("inserted")
    )
    # The threads and leads are found by their primary keys whatever the planner thinks of the CTEs' sizes
    # (`= ANY(array)`): a join to a CTE it guesses at 100 rows is a scan of the whole table while it is small.
    threads_moved = _ids(select(func.array_agg(inserted.c.conversation_id.distinct())))
    added = (
        select(func.count())
        .select_from(inserted)
        .where(inserted.c.conversation_id == conversations.c.id)
        .scalar_subquery()
    )
    moved = (
        update(conversations)
        .where(conversations.c.id == func.any(threads_moved))
        .values(
            unread_count=conversations.c.unread_count + added,
            status=ConversationStatus.OPEN.value,
            last_message_at=sql_now(),
            updated_at=sql_now(),
        )
        .returning(conversations.c.lead_id)
        .cte("moved")
    )
    leads_stamped = _ids(select(func.array_agg(moved.c.lead_id.distinct())))
    stamped = update(leads).where(leads.c.id == func.any(leads_stamped)).values(last_inbound_at=sql_now())
    return select(inserted.c.id, inserted.c.conversation_id).add_cte(stamped.cte("stamped"))


def _ids(aggregated: Select) -> Any:
    """A select of one uuid[] as the array `= ANY(…)` takes (not as a subquery of rows: the cast says so)."""
    return cast(aggregated.scalar_subquery(), ARRAY(Uuid))


def _inbound_received(row: dict, thread_id: uuid.UUID) -> DomainEvent:
    return DomainEvent(
        type=CONVERSATION_INBOUND_RECEIVED,
        organization_id=row["organization_id"],
        aggregate_id=thread_id,
        payload={
            "organizationId": str(row["organization_id"]),
            "conversationId": str(thread_id),
            "leadId": str(row["lead_id"]),
            "messageId": str(row["message_id"]),
            "channel": CHANNEL,
        },
    )
