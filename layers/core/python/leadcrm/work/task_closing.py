"""Lead tasks close automatically (spec TKN-420): `lead.status_changed` into lost, converted or customer
cancels the lead's open linked tasks.

It runs in task_lifecycle, after the status change committed, so it can never fail the status change.
What it guarantees:

- One set-based UPDATE cancels every open (pending / in_progress, not deleted) task linked to the lead,
  of any type (see `leadcrm.work.rules.task_closing` for why every linked type), and one `tasks_closed`
  timeline entry names them (best-effort, keyed on the event id).
- Idempotent: the lead row is taken first (as every lead write does, so this queues behind a follow-up
  write instead of deadlocking with it); a delivery whose event id already has its `tasks_closed` entry
  does nothing, and a re-run finds no open task the first run left behind.
- Stale deliveries change nothing: a lead that is no longer closed (it came back since) keeps its new
  tasks, and a task created after the status change (someone's deliberate work on the closed lead) stays.
- Reopen: nothing here re-opens a task; a returning lead's next follow-up creates a new one.
- Failures: a transient database error (deadlock, serialization, lock or statement timeout, lost
  connection) is raised, so SQS redelivers the message; anything else (a malformed event, a bug) is logged
  with ids only, counted in the `LeadTaskCloseFailed` metric and acknowledged, so one bad message never
  poisons the queue. Either way the work ran in a SAVEPOINT and left the consumer's transaction usable.

`lead.returned` is handled by the follow-up sync (`follow_ups.sync_return_call`): the return call gets its task.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from sqlalchemy import Connection, exists, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import DBAPIError

from leadcrm.leads.moves import lock_lead
from leadcrm.leads.tables import lead_activity_events
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import NotFound
from leadcrm.platform.failures import classify, sqlstate
from leadcrm.platform.ids import uuid7
from leadcrm.work.rules.task_closing import OPEN_TASK_STATUSES, TASKS_CLOSED_ACTIVITY, closes_tasks
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

METRICS_NAMESPACE = "LeadCRM"  # the POWERTOOLS_METRICS_NAMESPACE infra sets on every function
FAILURE_METRIC = "LeadTaskCloseFailed"



def handle_lead_status_changed(conn: Connection, detail: dict[str, Any]) -> bool:
    """The `_HANDLERS` entry for `lead.status_changed`; True when it cancelled at least one task."""
    try:
        event_id, organization_id, lead_id, to_status, occurred_at = _read(detail)
    except (KeyError, TypeError, ValueError):
        _report_failure("malformed", detail)
        return False
    if not closes_tasks(to_status):
        return False
    try:
        with conn.begin_nested():
            cancelled = close_open_tasks(conn, event_id, organization_id, lead_id, occurred_at)
    except DBAPIError as error:
        if is_transient(error):
            _report_failure("transient", detail, error)
            raise  # SQS redelivers; after maxReceiveCount the message goes to the DLQ (alarmed)
        _report_failure("permanent", detail, error)
        return False
    except Exception as error:  # a bug must not poison the batch either: logged, counted, acknowledged
        _report_failure("permanent", detail, error)
        return False
    if cancelled:
        logger.info(
            "lead tasks cancelled",
            extra={"eventId": str(event_id), "leadId": str(lead_id), "count": len(cancelled)},
        )
    return bool(cancelled)


def close_open_tasks(
    conn: Connection,
    event_id: uuid.UUID,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    occurred_at: datetime,
) -> list[uuid.UUID]:
    """Cancels the lead's open linked tasks for this status change, once; the ids it cancelled."""
    try:
        lead = lock_lead(conn, organization_id, lead_id)
    except NotFound:
        return []  # erased before the event arrived: its tasks went with it
    if not closes_tasks(lead["status"]):
        return []  # the lead came back since this change: its current tasks belong to its new life
    already_handled = conn.execute(
        select(
            exists().where(
                lead_activity_events.c.source_event_id == event_id,
                lead_activity_events.c.type == TASKS_CLOSED_ACTIVITY,
            )
        )
    ).scalar_one()
    if already_handled:
        return []
    cancelled = list(
        conn.execute(
            update(tasks)
            .where(
                tasks.c.organization_id == organization_id,
                tasks.c.linked_lead_id == lead_id,
                tasks.c.status.in_(OPEN_TASK_STATUSES),
                tasks.c.deleted_at.is_(None),
                tasks.c.created_at <= occurred_at,
            )
            .values(status="cancelled", cancelled_at=sql_now(), updated_at=sql_now())
            .returning(tasks.c.id)
        ).scalars()
    )
    if cancelled:
        _record_tasks_closed(conn, event_id, organization_id, lead_id, lead["status"], cancelled)
    return cancelled


def _record_tasks_closed(
    conn: Connection,
    event_id: uuid.UUID,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    status: str,
    task_ids: list[uuid.UUID],
) -> None:
    """The `tasks_closed` timeline entry (ids only), once per event; best-effort like every timeline write."""
    try:
        with conn.begin_nested():
            conn.execute(
                pg_insert(lead_activity_events)
                .values(
                    id=uuid7(),
                    organization_id=organization_id,
                    lead_id=lead_id,
                    type=TASKS_CLOSED_ACTIVITY,
                    payload={
                        "reason": "lead_status",
                        "status": status,
                        "taskIds": sorted(str(task_id) for task_id in task_ids),
                        "eventId": str(event_id),
                    },
                    source_event_id=event_id,
                )
                .on_conflict_do_nothing(
                    index_elements=["source_event_id", "type"],
                    index_where=lead_activity_events.c.source_event_id.isnot(None),
                )
            )
    except Exception:
        logger.warning("tasks_closed entry not written", extra={"eventId": str(event_id), "leadId": str(lead_id)})


def _read(detail: dict[str, Any]) -> tuple[uuid.UUID, uuid.UUID, uuid.UUID, str, datetime]:
    payload = detail["payload"]
    occurred_at = datetime.fromisoformat(str(detail["occurredAt"]))
    if occurred_at.tzinfo is None:
        raise ValueError("occurredAt must carry its offset")
    return (
        uuid.UUID(str(detail["eventId"])),
        uuid.UUID(str(detail["organizationId"])),
        uuid.UUID(str(payload["leadId"])),
        str(payload["toStatus"]),
        occurred_at,
    )


def is_transient(error: DBAPIError) -> bool:
    """The consumers' one rule (leadcrm.platform.failures): worth a retry, or the same on every delivery."""
    return classify(error).transient


def _report_failure(kind: str, detail: dict[str, Any], error: BaseException | None = None) -> None:
    """Logged with ids and the error's class only (a driver message can quote row values), and counted."""
    payload = detail.get("payload") if isinstance(detail.get("payload"), dict) else {}
    context = {
        "failure": kind,
        "eventId": str(detail.get("eventId")),
        "organizationId": str(detail.get("organizationId")),
        "leadId": str(payload.get("leadId")),
        "errorType": type(error).__name__ if error else None,
        "sqlstate": sqlstate(error) if isinstance(error, DBAPIError) else None,
        "metric": FAILURE_METRIC,
    }
    logger.error("closing the lead's tasks failed", extra=context)
    try:
        # single_metric flushes at once (an EMF line on stdout that CloudWatch turns into the metric), so
        # it needs no metrics context around the handler and counts even when the record is retried.
        with single_metric(name=FAILURE_METRIC, unit=MetricUnit.Count, value=1, namespace=METRICS_NAMESPACE) as metric:
            metric.add_dimension(name="failure", value=kind)
    except Exception:  # counting must never turn a handled failure into an unhandled one
        logger.warning("failure metric not emitted", extra={"metric": FAILURE_METRIC})
