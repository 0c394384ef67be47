"""What the ingestion function does with each kind of message: translate it into service calls, nothing more.

Every webhook delivery ends in one outcome per lead it carried (created, reopened, duplicate, replayed, or
dropped: no active connection, organic WhatsApp message). Each outcome is counted (a CloudWatch metric,
`Ingestion.<channel>.<outcome>`) and logged with ids only.

The Meta leads and WhatsApp messages of one SQS batch are taken in together (`lead_batch`, one unit of work:
`leadcrm.ingestion.webhook_leads.ingest_deliveries`) before the records are handled one by one; each record
then settles what happened to its own leads (`batched`), so a record whose lead failed is reported alone.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from leadcrm.ingestion.csv_import_runner import run_import
from leadcrm.ingestion.rules.meta import WhatsAppMessage, fetched_lead_from_payload, whatsapp_messages
from leadcrm.ingestion.webhook_leads import (
    DROPPED,
    Delivery,
    Ingested,
    Outcome,
    ingest_deliveries,
    ingest_meta_lead,
    ingest_whatsapp_message,
)
from leadcrm.ingestion.whatsapp import receive_webhook, receive_webhooks, record_send_outcome, store_synced_templates
from leadcrm.platform import json_limits
from leadcrm.platform.adapters import webhook_bodies
from leadcrm.platform.adapters.ingestion_queue import forward_to_graph_fetch
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
# The WhatsApp webhooks whose messages and statuses `lead_batch` recorded with the batch's others.
_conversations_recorded: set[str] = set()


@contextmanager
def lead_batch(records: list[dict[str, Any]]) -> Iterator[None]:
    """Take in every Meta lead and WhatsApp message of an SQS batch in one unit of work, for the records'
    handlers to settle. A record that does not read as one is left to its handler, which rejects it."""
    deliveries: list[Delivery] = []
    owners: list[str] = []
    for record in records:
        for delivery in _deliveries_of(record):
            deliveries.append(delivery)
            owners.append(record["messageId"])
    known_leads: dict[str, uuid.UUID] = {}  # a referral's wamid → the lead it was taken in as
    if deliveries:
        try:
            for owner, delivery, result in zip(owners, deliveries, ingest_deliveries(deliveries), strict=True):
                _batched.setdefault(owner, []).append(result)
                if isinstance(delivery, WhatsAppMessage) and isinstance(result, Ingested) and result.lead_id:
                    known_leads[delivery.wamid] = result.lead_id
        except Exception as error:  # then each record is taken in by its own handler, as before batches
            _batched.clear()
            logger.warning("the batch's leads could not be taken in together", extra={"error": type(error).__name__})
    _record_conversations_together(records, known_leads)
    try:
        yield
    finally:
        _batched.clear()
        _conversations_recorded.clear()


def conversations_recorded(message_id: str) -> bool:
    """True when `lead_batch` recorded this WhatsApp webhook's messages and statuses with the batch."""
    return message_id in _conversations_recorded


def _record_conversations_together(records: list[dict[str, Any]], known_leads: dict[str, uuid.UUID]) -> None:
    """The threads' side of the batch's WhatsApp webhooks whose leads were taken in together, in one unit of
    work; should it fail, each record's handler records its own, as before batches."""
    payloads: dict[str, dict[str, Any]] = {}
    for record in records:
        results = _batched.get(record["messageId"])
        if results is None or any(isinstance(result, Exception) for result in results):
            continue  # not taken in with the batch, or failing: its handler settles it as before batches
        try:
            body = json_object(json_limits.loads(record["body"]), "the SQS body")
            if body.get("kind") == "whatsapp":
                payloads[record["messageId"]] = json_object(webhook_bodies.payload_of(body), "the payload")
        except Exception:  # the record's handler reads it again, and rejects it with the reason
            continue
    if not payloads:
        return
    try:
        outcomes = receive_webhooks(list(payloads.values()), known_leads)
    except Exception as error:
        logger.warning(
            "the batch's WhatsApp messages could not be recorded together", extra={"error": type(error).__name__}
        )
        return
    _conversations_recorded.update(payloads)
    _count_conversations(outcomes)


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


def _deliveries_of(record: dict[str, Any]) -> list[Delivery]:
    """The leads a record carries, or none when it is no Meta lead or WhatsApp webhook or does not read."""
    try:
        body = json_object(json_limits.loads(record["body"]), "the SQS body")
        if body.get("kind") == "meta.lead":
            return [fetched_lead_from_payload(json_object(body.get("payload"), "the payload"))]
        if body.get("kind") == "whatsapp":
            return list(whatsapp_messages(json_object(webhook_bodies.payload_of(body), "the payload")))
    except Exception:  # the record's handler reads it again, and rejects it with the reason
        return []
    return []


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
