"""What the ingestion function does with each kind of message: translate it into service calls, nothing more.

Every webhook delivery ends in one outcome per lead it carried (created, reopened, duplicate, replayed, or
dropped: no active connection, organic WhatsApp message). Each outcome is counted (a CloudWatch metric,
`Ingestion.<channel>.<outcome>`) and logged with ids only.

The Meta leads and WhatsApp messages of one SQS batch are taken in together, and the batch's WhatsApp messages
and statuses recorded in their threads, in one unit of work (`lead_batch`:
`leadcrm.ingestion.webhook_leads.ingest_batch`) before the records are handled one by one; each record then
settles what happened to its own leads (`batched`), so a record whose lead failed is reported alone.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from leadcrm.ingestion.csv_import_runner import run_import
from leadcrm.ingestion.rules.meta import (
    WhatsAppMessage,
    fetched_lead_from_payload,
    whatsapp_messages,
    whatsapp_statuses,
)
from leadcrm.ingestion.webhook_deliveries import DROPPED
from leadcrm.ingestion.webhook_leads import (
    Alongside,
    Connections,
    Delivery,
    Ingested,
    Outcome,
    ingest_batch,
    ingest_meta_lead,
    ingest_whatsapp_message,
)
from leadcrm.ingestion.whatsapp import (
    receive_webhook,
    record_send_outcome,
    record_webhooks,
    store_synced_templates,
    webhook_accounts,
)
from leadcrm.platform import json_limits
from leadcrm.platform.adapters import webhook_bodies
from leadcrm.platform.adapters.ingestion_queue import forward_to_graph_fetch
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.failures import json_object, reading

logger = Logger(service="leadcrm")
metrics = Metrics(namespace="LeadCRM", service="leadcrm")


def meta_lead(body: dict[str, Any], context: Any) -> None:
    """G6: a Lead Ads lead the graph_fetch function read from Graph (this function never calls Graph)."""
    with reading("meta.lead message"):
        lead = fetched_lead_from_payload(json_object(body.get("payload"), "the payload"))
    count(ingest_meta_lead(lead))


def meta_leadgen(body: dict[str, Any], context: Any) -> None:
    """A raw leadgen webhook on this queue (enqueued before graph_fetch existed, or redriven from this DLQ):
    handed on to the graph-fetch queue, which reads the leads from Graph and sends them back here."""
    message_id = forward_to_graph_fetch(body)
    logger.info("leadgen webhook forwarded to graph-fetch", extra={"forwardedMessageId": message_id})


def meta_crm_event_result(body: dict[str, Any], context: Any) -> None:
    """Meta's answer to a CRM event the meta_events function sent: kept on the event and the lead's timeline."""
    from leadcrm.ingestion.meta_crm_events import record_result
    from leadcrm.platform.db.uow import UnitOfWork

    with reading("meta.crm_event_result message"), UnitOfWork() as uow:
        recorded = record_result(uow.connection, body)
        uow.commit()
    logger.info("CRM event answer", extra={"crmEventId": body.get("crmEventId"), "recorded": recorded})


def whatsapp(body: dict[str, Any], context: Any) -> None:
    """G7: every inbound message of a WhatsApp Cloud webhook (organic ones are dropped and counted), then
    the webhook's messages and statuses in the conversations (`whatsapp_conversations`)."""
    with reading("WhatsApp webhook"):
        messages = whatsapp_messages(json_object(webhook_bodies.payload_of(body), "the payload"))
    for message in messages:
        count(ingest_whatsapp_message(message))
    whatsapp_conversations(body)


def whatsapp_conversations(body: dict[str, Any]) -> None:
    """A known lead's messages into its WhatsApp thread and the status updates onto what was sent
    (leadcrm.ingestion.whatsapp), after the referrals were taken in as leads. Each outcome is counted."""
    with reading("WhatsApp webhook"):
        payload = json_object(webhook_bodies.payload_of(body), "the payload")
    _count_conversations(receive_webhook(payload))


def _count_conversations(outcomes: Counter[str]) -> None:
    for outcome, number in outcomes.items():
        metrics.add_metric(name=f"WhatsApp.{outcome}", unit=MetricUnit.Count, value=number)


def whatsapp_sent(body: dict[str, Any], context: Any) -> None:
    """What Graph answered to a send graph_fetch made: the message `sent` with its wamid, or `failed`."""
    with reading("whatsapp.sent message"):
        organization_id, message_id = uuid.UUID(str(body["organizationId"])), uuid.UUID(str(body["messageId"]))
        wamid = body.get("wamid") if isinstance(body.get("wamid"), str) and body.get("wamid") else None
        error = str(body["error"]) if body.get("error") is not None else None
    record_send_outcome(organization_id, message_id, wamid=wamid, error=error)


def whatsapp_templates(body: dict[str, Any], context: Any) -> None:
    """An organization's templates graph_fetch read from its WhatsApp Business account."""
    with reading("whatsapp.templates message"):
        organization_id = uuid.UUID(str(body["organizationId"]))
        business_account_id = str(body["businessAccountId"])
        templates = [t for t in body.get("templates") or [] if isinstance(t, dict)]
    store_synced_templates(organization_id, business_account_id, templates)


# What the batch's leads became, per SQS message id (filled by `lead_batch`, read by `batched`).
_batched: dict[str, list[Ingested | Exception]] = {}
# The WhatsApp webhooks whose messages and statuses `lead_batch` recorded with the batch's leads.
_conversations_recorded: set[str] = set()


@dataclass
class _Records:
    """What `lead_batch` read of an SQS batch's records: the leads they carry (each with its record's message
    id) and the WhatsApp webhooks among them (message id → payload)."""

    deliveries: list[Delivery] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    webhooks: dict[str, dict[str, Any]] = field(default_factory=dict)


@contextmanager
def lead_batch(records: list[dict[str, Any]]) -> Iterator[None]:
    """Take in every Meta lead and WhatsApp message of an SQS batch, and record the batch's WhatsApp messages
    and statuses in their threads, in one unit of work (one commit, one publish), for the records' handlers
    to settle. Should that unit of work fail, each lead is taken in alone and each record's handler records
    its own webhook. A record that does not read as one is left to its handler, which rejects it."""
    read = _read_records(records)
    if read.deliveries or read.webhooks:
        try:
            alongside = _conversations_alongside(read) if read.webhooks else None
            results, recorded = ingest_batch(read.deliveries, alongside)
        except Exception as error:  # then each record is handled by its own handler, as before batches
            logger.warning("the batch could not be taken in together", extra={"error": type(error).__name__})
        else:
            for owner in read.webhooks:
                _batched.setdefault(owner, [])  # a webhook of statuses only is settled as the batch's too
            for owner, result in zip(read.owners, results, strict=True):
                _batched.setdefault(owner, []).append(result)
            if recorded is not None:
                owners, outcomes = recorded
                _conversations_recorded.update(owners)
                _count_conversations(outcomes)
    try:
        yield
    finally:
        _batched.clear()
        _conversations_recorded.clear()


def conversations_recorded(message_id: str) -> bool:
    """True when `lead_batch` recorded this WhatsApp webhook's messages and statuses with the batch."""
    return message_id in _conversations_recorded


def _conversations_alongside(read: _Records) -> Alongside[tuple[list[str], Counter[str]]]:
    """The threads' side of the batch's WhatsApp webhooks, in the unit of work that took their leads in, after
    them (a referral's message lands in the thread of the lead it made). A webhook with a lead that failed is
    left out: its record fails, and its redelivery records it."""

    def record(
        uow: UnitOfWork, connections: Connections, results: list[Ingested | Exception]
    ) -> tuple[list[str], Counter[str]]:
        failed = {owner for owner, result in zip(read.owners, results, strict=True) if isinstance(result, Exception)}
        known_leads = {
            delivery.wamid: result.lead_id
            for delivery, result in zip(read.deliveries, results, strict=True)
            if isinstance(delivery, WhatsAppMessage) and isinstance(result, Ingested) and result.lead_id
        }
        owners = [owner for owner in read.webhooks if owner not in failed]
        outcomes = record_webhooks(uow, connections, [read.webhooks[owner] for owner in owners], known_leads)
        return owners, outcomes

    return Alongside(frozenset(webhook_accounts(list(read.webhooks.values()))), record)


def batched(message_id: str) -> bool:
    """Settle a record whose leads `lead_batch` took in: count each outcome, raise the first failure.
    False when the record was not one of them."""
    results = _batched.pop(message_id, None)
    if results is None:
        return False
    for result in results:
        if isinstance(result, Ingested):
            count(result)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return True


def _read_records(records: list[dict[str, Any]]) -> _Records:
    """The leads each record carries and its WhatsApp webhook; a record that is no Meta lead or WhatsApp
    webhook, or does not read, carries none (its handler reads it again, and rejects it with the reason)."""
    read = _Records()
    for record in records:
        try:
            body = json_object(json_limits.loads(record["body"]), "the SQS body")
            if body.get("kind") == "meta.lead":
                deliveries: list[Delivery] = [
                    fetched_lead_from_payload(json_object(body.get("payload"), "the payload"))
                ]
            elif body.get("kind") == "whatsapp":
                payload = json_object(webhook_bodies.payload_of(body), "the payload")
                deliveries = list(whatsapp_messages(payload))
                whatsapp_statuses(payload)  # read here too: a webhook whose statuses do not read fails alone
                read.webhooks[record["messageId"]] = payload
            else:
                continue
        except Exception:  # the record's handler reads it again, and rejects it with the reason
            continue
        read.deliveries.extend(deliveries)
        read.owners.extend([record["messageId"]] * len(deliveries))
    return read


def lead_import(body: dict[str, Any], context: Any) -> None:
    """Run (or continue) a CSV import job until the file ends or the invocation's time runs short."""
    with reading("lead_import message"):
        job_id = uuid.UUID(str(body["jobId"]))
    result = run_import(
        job_id,
        worker=context.aws_request_id,
        remaining_ms=context.get_remaining_time_in_millis,
    )
    logger.info("lead import run", extra={"jobId": str(job_id), "result": result.value})


def count(result: Ingested) -> None:
    metrics.add_metric(name=f"Ingestion.{result.channel}.{result.outcome.value}", unit=MetricUnit.Count, value=1)
    if result.outcome is Outcome.ORGANIC:
        # no lead to make, as designed: a known lead's message still lands in its thread (whatsapp_conversations)
        logger.info("webhook event makes no lead", extra=result.log_fields())
    elif result.outcome in DROPPED:
        logger.warning("webhook event dropped", extra=result.log_fields())
    else:
        logger.info("webhook event ingested", extra=result.log_fields())


def flush_metrics() -> None:
    """Publish what this invocation counted (EMF on stdout); a batch that counted nothing publishes nothing."""
    if metrics.metric_set:
        metrics.flush_metrics()
