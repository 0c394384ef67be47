"""meta_events: sends CRM events to Meta's Conversions API, outside the VPC, and reports Meta's answer back.

Like graph_fetch: the functions in the VPC cannot reach graph.facebook.com (isolated subnets, no NAT gateway),
this one can, and it has no database. task_lifecycle queues each CRM event on the meta-events queue once it
has checked the lead may still be sent (leadcrm.ingestion.meta_crm_events); this function reads the page's
token (the connection's secret, Secrets Manager, cached 5 minutes), POSTs `{"data": [event]}` to
`{META_GRAPH_BASE_URL}/{dataset id}/events` and queues Meta's answer on the ingestion queue
(`meta.crm_event_result`), which records it on the event's row and the lead's timeline, as graph_fetch's
fetched leads come back to ingestion.

Outcomes (a metric `MetaCrmEvents.<outcome>` and an ids-only log):

- sent: Meta took the event (`events_received`);
- refused: Meta answered a 4xx about the event itself (a bad dataset id, say): reported as failed, not retried;
- no_secret: the page is not connected any more: reported as failed;
- failed for now: no answer, a 5xx, throttling or a token Meta rejects. The record is reported as a batch item
  failure, retried, and parked in the meta-events DLQ after the queue's receive limit (`make redrive
  QUEUE=meta-events` once the cause is fixed). The event id is the same on every attempt: Meta de-duplicates.

It imports neither SQLAlchemy nor pydantic (the import contracts say so).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from leadcrm.ingestion import meta_graph
from leadcrm.ingestion.rules.meta import META_PROVIDER
from leadcrm.ingestion.rules.meta_crm import CRM_RESULT_KIND
from leadcrm.platform import clock, json_limits
from leadcrm.platform.adapters import ingestion_queue, integration_secrets
from leadcrm.platform.failures import INVALID_DATA, Rejected, json_object, reading, rejecting_permanent
from leadcrm.platform.telemetry import instrumented

logger = Logger(service="leadcrm")
metrics = Metrics(namespace="LeadCRM", service="leadcrm")
processor = BatchProcessor(event_type=EventType.SQS)

SENT, REFUSED, NO_SECRET = "sent", "refused", "no_secret"
NO_SECRET_ANSWER = {"error": {"code": "no_secret", "message": "The page is not connected: no token to send with."}}


@rejecting_permanent("meta_events", lambda record: record.message_id)
def record_handler(record: SQSRecord, lambda_context: Any = None) -> dict[str, Any]:
    """One CRM event: sent, and Meta's answer queued for ingestion."""
    with reading("CRM event message"):
        body = json_object(json_limits.loads(record.body), "the SQS body")
        ids = {key: str(body[key]) for key in ("crmEventId", "organizationId", "leadId", "pageId", "datasetId")}
        event = json_object(body["event"], "the event")
    if not ids["datasetId"].isdigit():
        raise Rejected(INVALID_DATA, "dataset id is not a Meta id")
    token = integration_secrets.read_account_token(META_PROVIDER, ids["pageId"])
    if token is None:
        return _report(ids, NO_SECRET, delivered=False, status=None, answer=NO_SECRET_ANSWER)
    try:
        status, answer = meta_graph.send_events(ids["datasetId"], [event], token)
    except meta_graph.GraphError as error:
        logger.warning(
            "Meta did not take the CRM event; retried", extra={**ids, "status": error.status, "code": error.code}
        )
        raise
    delivered = 200 <= status < 300 and "error" not in answer
    return _report(ids, SENT if delivered else REFUSED, delivered=delivered, status=status, answer=answer)


def _report(
    ids: dict[str, str], outcome: str, *, delivered: bool, status: int | None, answer: dict[str, Any]
) -> dict[str, Any]:
    message_id = ingestion_queue.enqueue(
        CRM_RESULT_KIND,
        {
            "crmEventId": ids["crmEventId"],
            "organizationId": ids["organizationId"],
            "leadId": ids["leadId"],
            "delivered": delivered,
            "status": status,
            "answer": answer,
            "answeredAt": clock.now().isoformat(),
        },
    )
    metrics.add_metric(name=f"MetaCrmEvents.{outcome}", unit=MetricUnit.Count, value=1)
    fields = {**ids, "outcome": outcome, "status": status, "forwardedMessageId": message_id}
    if delivered:
        logger.info("CRM event sent", extra=fields)
    else:
        logger.warning("CRM event refused", extra=fields)
    return {"outcome": outcome}


@instrumented()  # each record's lines carry its message id (rejecting_permanent)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        if metrics.metric_set:
            metrics.flush_metrics()
