"""Conversions API for CRM: a Lead Ads lead's stage changes become CRM events in the organization's Meta dataset.

Three steps, each idempotent, so SQS's at-least-once delivery never sends an event twice in our log:

1. `record_crm_event` (task_lifecycle, on `lead.created` and `lead.status_changed`: conversions and course
   purchases move the lead through the same move service, so their stage changes arrive as these events too).
   For a lead that came from Lead Ads (it has a leadgen id) whose page's connection has CRM events on, and
   that is neither erased, pseudonymized nor do-not-contact (every channel revoked): the CRM event is built
   (`rules.meta_crm`) and recorded `pending`, unique on its event id (derived from the domain event's id: a
   redelivered status change finds its row and adds nothing), with `lead.crm_event_recorded` in the outbox.
2. `hand_to_sender` (task_lifecycle, on `lead.crm_event_recorded`, after step 1 committed): the same refusals
   are checked again just before the event leaves the VPC (an erasure or a pseudonymization in between deleted
   the row: nothing to send; a dnc or a disconnect marks it `withdrawn`), then the event is queued for the
   meta_events function (outside the VPC) and marked `queued`. A redelivery finds it queued and does nothing.
3. `record_result` (ingestion, on the sender's `meta.crm_event_result`): Meta's answer (events_received, or
   the error) is kept on the row (`sent` / `failed`) and written on the lead's timeline once
   (`meta_crm_event_sent`: what was sent, without the hashes, and Meta's answer).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import DBAPIError

from leadcrm.ingestion.meta_crm import CHANNELS, connection_active, crm_target, lead_facts, stage_name
from leadcrm.ingestion.rules.meta_crm import (
    CRM_EVENT_KIND,
    SENT_ACTIVITY,
    Refusal,
    build_crm_event,
    event_name_for,
    meta_answer,
    refusal,
    sent_summary,
)
from leadcrm.ingestion.tables import meta_crm_events
from leadcrm.leads.activity import record_activity
from leadcrm.leads.identity import organization_region
from leadcrm.leads.rules.identity import normalize_phone
from leadcrm.platform.adapters import meta_events_queue
from leadcrm.platform.db.consumer_uow import ConsumerUnitOfWork
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.failures import classify
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

LEAD_CRM_EVENT_RECORDED = "lead.crm_event_recorded"
# The domain events whose stage change is sent (wiring.META_CRM_EVENTS).
STAGE_EVENTS = ("lead.created", "lead.status_changed")
PENDING, QUEUED, SENT, FAILED, WITHDRAWN = "pending", "queued", "sent", "failed", "withdrawn"


def on_stage_event(conn: Connection, detail: dict[str, Any]) -> bool:
    """The reaction beside `lead.created` / `lead.status_changed`'s own: True when a CRM event was recorded.
    It runs in a SAVEPOINT so that a failure of its own never undoes the other reaction's work: a transient
    database error is raised (SQS redelivers, both reactions are idempotent), anything else is logged with
    ids and acknowledged."""
    try:
        with conn.begin_nested():
            return record_crm_event(conn, detail)
    except DBAPIError as error:
        if classify(error).transient:
            raise
        _not_recorded(detail, error)
        return False
    except (KeyError, TypeError, ValueError) as error:  # a malformed event: never worth a retry
        _not_recorded(detail, error)
        return False


def _not_recorded(detail: dict[str, Any], error: BaseException) -> None:
    """Ids and the error's class only: a driver's message can quote row values."""
    logger.warning("CRM event not recorded", extra={"eventId": detail.get("eventId"), "error": type(error).__name__})


def record_crm_event(conn: Connection, detail: dict[str, Any]) -> bool:
    organization_id = uuid.UUID(detail["organizationId"])
    payload = detail["payload"]
    lead_id = uuid.UUID(payload["leadId"])
    stage_id = payload.get("toStageId") or payload.get("stageId")
    if not stage_id:
        return False
    record = lead_facts(conn, organization_id, lead_id)
    if not record.facts.leadgen_id:  # most leads: not from Lead Ads, one statement and done
        return False
    target = crm_target(conn, organization_id, record.page_id)
    if refusal(record.facts, channels=CHANNELS, configured=target is not None) is not None or target is None:
        return False
    name = stage_name(conn, organization_id, uuid.UUID(str(stage_id)))
    if name is None:
        return False
    hashed = target.settings.send_hashed_contact
    event = build_crm_event(
        event_name=event_name_for(str(stage_id), name, target.settings.stage_event_names),
        occurred_at=datetime.fromisoformat(detail["occurredAt"]),
        source_event_id=str(detail["eventId"]),
        leadgen_id=record.facts.leadgen_id,
        email=record.email if hashed else None,
        phone_e164=normalize_phone(record.phone, organization_region(conn, organization_id)) if hashed else None,
    )
    row_id = uuid7()
    inserted = conn.execute(
        pg_insert(meta_crm_events)
        .values(
            id=row_id,
            organization_id=organization_id,
            lead_id=lead_id,
            connection_id=target.connection_id,
            event_id=event["event_id"],
            source_event_id=uuid.UUID(str(detail["eventId"])),
            event_name=event["event_name"],
            event_time=datetime.fromisoformat(detail["occurredAt"]),
            dataset_id=target.settings.dataset_id,
            page_id=target.page_id,
            payload=event,
            status=PENDING,
        )
        .on_conflict_do_nothing(index_elements=[meta_crm_events.c.event_id])
        .returning(meta_crm_events.c.id)
    ).first()
    if inserted is None:  # a redelivery of the same status change
        return False
    uow = ConsumerUnitOfWork(conn)
    uow.add_event(
        DomainEvent(
            type=LEAD_CRM_EVENT_RECORDED,
            organization_id=organization_id,
            aggregate_id=lead_id,
            payload={"leadId": str(lead_id), "crmEventId": str(row_id)},
        )
    )
    uow.write_events()
    logger.info("CRM event recorded", extra={"leadId": str(lead_id), "crmEventId": str(row_id)})
    return True


def hand_to_sender(conn: Connection, detail: dict[str, Any]) -> bool:
    """`lead.crm_event_recorded`: check again, then queue the event for the sender (once)."""
    organization_id = uuid.UUID(detail["organizationId"])
    crm_event_id = uuid.UUID(detail["payload"]["crmEventId"])
    row = conn.execute(
        select(meta_crm_events)
        .where(meta_crm_events.c.id == crm_event_id, meta_crm_events.c.organization_id == organization_id)
        .with_for_update()
    ).first()
    if row is None or row.status != PENDING:  # erased or pseudonymized since (deleted), or handed already
        return False
    record = lead_facts(conn, organization_id, row.lead_id)
    target = crm_target(conn, organization_id, row.page_id)
    why = refusal(record.facts, channels=CHANNELS, configured=target is not None)
    if why in (None, Refusal.NOT_CONFIGURED) and (target is None or target.connection_id != row.connection_id):
        # its page's connection is gone (disconnected, or replaced by a new one) or its CRM events are off
        why = Refusal.NOT_CONFIGURED if connection_active(conn, row.connection_id) else Refusal.DISCONNECTED
    if why is not None:
        _set(conn, row.id, status=WITHDRAWN, withdrawn_reason=why.value)
        logger.info("CRM event withdrawn", extra={"crmEventId": str(row.id), "reason": why.value})
        return True
    message_id = meta_events_queue.enqueue(
        CRM_EVENT_KIND,
        {
            "crmEventId": str(row.id),
            "organizationId": str(organization_id),
            "leadId": str(row.lead_id),
            "pageId": row.page_id,
            "datasetId": row.dataset_id,
            "event": row.payload,
        },
    )
    _set(conn, row.id, status=QUEUED, queued_at=sql_now())
    logger.info("CRM event queued", extra={"crmEventId": str(row.id), "forwardedMessageId": message_id})
    return True


def record_result(conn: Connection, result: dict[str, Any]) -> bool:
    """The sender's answer: the row's status and Meta's answer, and the timeline entry, once. A result for a
    row that is gone (the lead erased or pseudonymized since) or already answered changes nothing."""
    crm_event_id = uuid.UUID(str(result["crmEventId"]))
    organization_id = uuid.UUID(str(result["organizationId"]))
    answer = meta_answer(result.get("status"), result.get("answer"))
    sent = bool(result.get("delivered"))
    row = conn.execute(
        update(meta_crm_events)
        .where(
            meta_crm_events.c.id == crm_event_id,
            meta_crm_events.c.organization_id == organization_id,
            meta_crm_events.c.status.in_((QUEUED, PENDING)),
        )
        .values(status=SENT if sent else FAILED, answer=answer, answered_at=sql_now(), updated_at=sql_now())
        .returning(meta_crm_events.c.lead_id, meta_crm_events.c.payload, meta_crm_events.c.dataset_id)
    ).first()
    if row is None:
        return False
    record_activity(
        conn,
        organization_id,
        row.lead_id,
        SENT_ACTIVITY,
        {
            "crmEventId": str(crm_event_id),
            "datasetId": row.dataset_id,
            "sent": sent,
            **sent_summary(row.payload),
            "answer": answer,
        },  # fmt: skip
    )
    return True


def _set(conn: Connection, row_id: uuid.UUID, **values: Any) -> None:
    conn.execute(update(meta_crm_events).where(meta_crm_events.c.id == row_id).values(updated_at=sql_now(), **values))
