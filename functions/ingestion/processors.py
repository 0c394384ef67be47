"""What the ingestion function does with each kind of message: translate it into service calls, nothing more.

Every webhook delivery ends in one outcome per lead it carried (created, reopened, duplicate, replayed, or
dropped: no active connection, organic WhatsApp message). Each outcome is counted (a CloudWatch metric,
`Ingestion.<channel>.<outcome>`) and logged with ids only.
"""

from __future__ import annotations

import uuid
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from leadcrm.ingestion.csv_import_runner import run_import
from leadcrm.ingestion.rules.meta import fetched_lead_from_payload, whatsapp_messages
from leadcrm.ingestion.webhook_leads import DROPPED, Ingested, ingest_meta_lead, ingest_whatsapp_message
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


def whatsapp(body: dict[str, Any], context: Any) -> None:
    """G7: every inbound message of a WhatsApp Cloud webhook (organic ones are dropped and counted)."""
    with reading("WhatsApp webhook"):
        messages = whatsapp_messages(json_object(webhook_bodies.payload_of(body), "the payload"))
    for message in messages:
        count(ingest_whatsapp_message(message))


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
    if result.outcome in DROPPED:
        logger.warning("webhook event dropped", extra=result.log_fields())
    else:
        logger.info("webhook event ingested", extra=result.log_fields())


def flush_metrics() -> None:
    """Publish what this invocation counted (EMF on stdout); a batch that counted nothing publishes nothing."""
    if metrics.metric_set:
        metrics.flush_metrics()
