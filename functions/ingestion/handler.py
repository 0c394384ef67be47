"""Ingestion consumer: SQS batches from the webhook receiver (Meta leadgen, WhatsApp) and SES inbound mail.

Each record is handled on its own; a failure is reported back (ReportBatchItemFailures) so only that
record is retried and, after maxReceiveCount, lands in the DLQ. The batch's Meta leads and WhatsApp messages
are taken in together first, in one unit of work (processors.lead_batch); their records then settle their
own outcome, so a lead that failed still fails only its record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from ingestion import processors
from leadcrm.conversations.inbound_email import receive_from_s3
from leadcrm.platform import json_limits
from leadcrm.platform.failures import json_object, reading, rejecting_permanent
from leadcrm.platform.telemetry import instrumented

logger = Logger(service="leadcrm")
processor = BatchProcessor(event_type=EventType.SQS)

# Message kind -> what processes it (the body, the Lambda context). A kind without an entry is logged only.
PROCESSORS: dict[str, Callable[[dict[str, Any], Any], None]] = {
    "meta.lead": processors.meta_lead,
    "meta.leadgen": processors.meta_leadgen,
    "meta.crm_event_result": processors.meta_crm_event_result,
    "whatsapp": processors.whatsapp,
    "whatsapp.sent": processors.whatsapp_sent,
    "whatsapp.templates": processors.whatsapp_templates,
    "lead_import": processors.lead_import,
}


def describe(body: dict[str, Any]) -> dict[str, Any]:
    """What a message is, in ids only (never PII); its kind picks the processor (PROCESSORS)."""
    if "kind" in body:
        return {"kind": body["kind"], "receivedAt": body.get("receivedAt")}
    if "Records" in body and body["Records"] and body["Records"][0].get("eventSource") == "aws:s3":
        s3 = body["Records"][0]["s3"]
        return {"kind": "email.inbound", "bucket": s3["bucket"]["name"], "key": s3["object"]["key"]}
    if body.get("Event") == "s3:TestEvent":
        return {"kind": "s3.test"}
    raise ValueError("unrecognised ingestion message")


@rejecting_permanent("ingestion", lambda record: record.message_id)
def record_handler(record: SQSRecord, lambda_context: Any = None) -> dict[str, Any]:
    """One message; a permanent failure (a body that is no message of ours, bad data, a constraint) is
    recorded and acknowledged, a transient one retried into the DLQ (leadcrm.platform.failures)."""
    with reading("ingestion message"):
        body = json_object(json_limits.loads(record.body), "the SQS body")
        summary = describe(body)
    logger.info("ingestion message received", extra={"messageId": record.message_id, **summary})
    if summary["kind"] == "email.inbound":
        receive_from_s3(summary["bucket"], summary["key"])
    elif processors.batched(record.message_id):
        # taken in with its batch (processors.lead_batch): its outcomes are counted, its failure raised
        if summary["kind"] == "whatsapp" and not processors.conversations_recorded(record.message_id):
            processors.whatsapp_conversations(body)
    elif (process := PROCESSORS.get(summary["kind"])) is not None:
        process(body, lambda_context)
    return summary


@instrumented()  # each record's lines carry its message id (rejecting_permanent)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        with processors.lead_batch(event.get("Records") or []):
            return process_partial_response(
                event=event, record_handler=record_handler, processor=processor, context=context
            )
    finally:
        processors.flush_metrics()
