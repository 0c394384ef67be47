"""task_lifecycle: domain events from the bus (via SQS) and scheduled jobs (EventBridge Scheduler).

An SQS record's body is the EventBridge event; its `detail` is the outbox event. A scheduled invocation's
payload is `{"job": "<name>"}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from leadcrm.conversations.bulk_email import run_bulk_email
from leadcrm.deals.rotting import run_rotting_sweep
from leadcrm.leads.rate_limits import delete_expired_counters
from leadcrm.lifecycle_reactions import handle_event
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.outbox import relay_unpublished
from leadcrm.qualification.merges import purge_expired_snapshots
from leadcrm.qualification.qualification import run_nurture_reevaluation
from leadcrm.qualification.scoring import run_rescore_job
from leadcrm.tickets.sweep import run_ticket_sweep
from leadcrm.work.digest import run_daily_digest

logger = Logger(service="leadcrm")
processor = BatchProcessor(event_type=EventType.SQS)

JOBS: dict[str, Callable[[], dict[str, int]]] = {
    "outbox_relay": relay_unpublished,
    "rate_limit_cleanup": delete_expired_counters,
    "daily_digest": run_daily_digest,
    "rescore_leads": run_rescore_job,
    "nurture_reevaluation": run_nurture_reevaluation,
    "merge_snapshot_purge": purge_expired_snapshots,
    "deal_rotting_sweep": run_rotting_sweep,
    "ticket_sweep": run_ticket_sweep,
    "bulk_email": run_bulk_email,
}


def record_handler(record: SQSRecord) -> bool:
    event = json.loads(record.body)
    detail_type, detail = event["detail-type"], event["detail"]
    with UnitOfWork() as uow:
        changed = handle_event(uow.connection, detail_type, detail)
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


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if "job" in event:
        return run_job(str(event["job"]))
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
