"""task_lifecycle: domain events from the bus (via SQS) and scheduled jobs (EventBridge Scheduler).

An SQS record's body is the EventBridge event; its `detail` is the outbox event. A scheduled invocation's
payload is `{"job": "<name>"}`. What reacts to which event, and which jobs exist, is `leadcrm.wiring`.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from leadcrm.platform import json_limits
from leadcrm.platform.config import get_settings
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.failures import json_object, reading, rejecting_permanent
from leadcrm.platform.outbox_acks import acknowledge_delivery
from leadcrm.platform.telemetry import instrumented
from leadcrm.wiring import JOBS, handle_event

logger = Logger(service="leadcrm")
processor = BatchProcessor(event_type=EventType.SQS)


@rejecting_permanent("task_lifecycle", lambda record: record.message_id)
def record_handler(record: SQSRecord) -> bool:
    """One event in its own unit of work, which also stamps the event's outbox row as delivered; a permanent
    failure is recorded and acknowledged, a transient one retried (leadcrm.platform.failures)."""
    with reading("EventBridge event"):
        event = json_object(json_limits.loads(record.body), "the SQS body")
        detail_type, detail = str(event["detail-type"]), json_object(event["detail"], "the event's detail")
    with UnitOfWork() as uow:
        changed = handle_event(uow.connection, detail_type, detail)
        # received, so published: the relay will not send it again (leadcrm.platform.outbox_acks)
        acknowledge_delivery(uow.connection, str(event.get("source", "")), get_settings().event_source, detail)
        uow.commit()
    logger.info(
        "event handled", extra={"detailType": detail_type, "eventId": detail.get("eventId"), "changed": changed}
    )
    return changed


def run_job(name: str) -> dict[str, Any]:
    job = JOBS.get(name)
    if job is None:
        raise ValueError(f"unknown scheduled job {name!r}; known: {sorted(JOBS)}")
    result = job()
    logger.info("scheduled job done", extra={"job": name, **result})
    return {"job": name, **result}


@instrumented()  # each record's lines carry its message id (rejecting_permanent)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if "job" in event:
        return run_job(str(event["job"]))
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
