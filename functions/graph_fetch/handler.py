"""graph_fetch: reads Meta Lead Ads leads from Graph, outside the VPC, and queues them for ingestion.

The ingestion function runs in isolated subnets without internet access (VPC endpoints, no NAT gateway),
so it cannot reach graph.facebook.com. This function can: it consumes the raw leadgen webhooks the
receiver queues on the graph-fetch queue, reads each change's page token from Secrets Manager (the secret
is named after the page, so no database is needed), fetches the lead by its leadgen id and queues it on
the ingestion queue as a `meta.lead` message. It also makes the WhatsApp Cloud API calls (a send, a
templates sync: graph_fetch/whatsapp.py), for the same reason. Ingestion routes, dedups, attributes and claims the
leadgen id exactly once, so a redelivered or retried webhook is harmless.

Like the webhook receiver it imports neither SQLAlchemy nor pydantic (a test asserts it). Outcomes:

- fetched: queued for ingestion;
- dropped and counted (a metric `Ingestion.meta_lead_ads.<outcome>` and an ids-only log): `no_secret`
  (the page is not connected) and `lead_gone` (Graph answered 4xx: the lead was deleted or cannot be read);
- failed: Graph 5xx, throttling, a token Graph rejects, or no answer. The record is reported as a batch
  item failure, retried, and parked in the graph-fetch DLQ after the queue's receive limit (`make redrive
  QUEUE=graph-fetch` once the cause is fixed, e.g. the page reconnected).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from graph_fetch import whatsapp
from leadcrm.ingestion import meta_graph
from leadcrm.ingestion.rules.meta import (
    META_CHANNEL,
    META_PROVIDER,
    LeadgenChange,
    fetched_lead_payload,
    leadgen_changes,
)
from leadcrm.platform import clock, json_limits
from leadcrm.platform.adapters import ingestion_queue, integration_secrets, webhook_bodies
from leadcrm.platform.failures import json_object, reading, rejecting_permanent
from leadcrm.platform.telemetry import instrumented

logger = Logger(service="leadcrm")
metrics = Metrics(namespace="LeadCRM", service="leadcrm")
processor = BatchProcessor(event_type=EventType.SQS)

FETCHED_KIND = "meta.lead"
FETCHED, NO_SECRET, LEAD_GONE = "fetched", "no_secret", "lead_gone"


@rejecting_permanent("graph_fetch", lambda record: record.message_id)
def record_handler(record: SQSRecord, lambda_context: Any = None) -> dict[str, Any]:
    """Every leadgen change of one webhook delivery (Meta batches them). A change that fails fails the
    record: the changes already queued are queued again on the retry, which ingestion recognises. A body
    that is no webhook (a payload `5`) is rejected: recorded, counted, acknowledged."""
    with reading("graph-fetch message"):
        body = json_object(json_limits.loads(record.body), "the SQS body")
        request = whatsapp.read(body) if body.get("kind") in whatsapp.KINDS else None
    if request is not None:  # a WhatsApp send or templates sync (graph_fetch/whatsapp.py)
        return {"outcome": whatsapp.handle(request)}
    with reading("leadgen webhook"):
        changes = leadgen_changes(json_object(webhook_bodies.payload_of(body), "the payload"))
    logger.info("leadgen webhook received", extra={"messageId": record.message_id, "changes": len(changes)})
    outcomes = [fetch_and_forward(change, received_at=body.get("receivedAt")) for change in changes]
    return {"outcomes": outcomes}


def fetch_and_forward(change: LeadgenChange, *, received_at: str | None = None) -> str:
    """Read one lead from Graph with its page's token and queue it for ingestion; the outcome."""
    ids = {"leadgenId": change.leadgen_id, "pageId": change.page_id}
    token = integration_secrets.read_account_token(META_PROVIDER, change.page_id)
    if token is None:
        return _count(NO_SECRET, ids, dropped=True)
    try:
        lead = meta_graph.fetch_lead(change.leadgen_id, token)
    except meta_graph.GraphError as error:
        details = {**ids, "status": error.status, "code": error.code}
        if error.lead_is_gone:
            return _count(LEAD_GONE, details, dropped=True)
        logger.warning("Graph could not give the lead; retried", extra=details)
        raise
    message_id = ingestion_queue.enqueue(
        FETCHED_KIND,
        {
            "receivedAt": received_at,
            "fetchedAt": clock.now().isoformat(),
            "payload": fetched_lead_payload(change, lead),
        },
    )
    return _count(FETCHED, {**ids, "forwardedMessageId": message_id}, dropped=False)


def _count(outcome: str, fields: dict[str, Any], *, dropped: bool) -> str:
    metrics.add_metric(name=f"Ingestion.{META_CHANNEL}.{outcome}", unit=MetricUnit.Count, value=1)
    if dropped:
        logger.warning("leadgen dropped", extra={"outcome": outcome, **fields})
    else:
        logger.info("lead fetched and queued for ingestion", extra={"outcome": outcome, **fields})
    return outcome


@instrumented()  # each record's lines carry its message id (rejecting_permanent)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        if metrics.metric_set:  # a batch that counted nothing publishes nothing
            metrics.flush_metrics()
