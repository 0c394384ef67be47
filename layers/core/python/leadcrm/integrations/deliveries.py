"""What became of each attempt, as the webhook_delivery function reports it (the `webhook.delivery_attempted`
event it puts on the bus, consumed here in the VPC), and staff's replay.

- 2xx: succeeded. Anything else, or no answer: tried again after a growing delay with jitter
  (rules.backoff) until a day has passed since the first attempt; then the delivery fails and the endpoint
  is disabled (`disabled_reason` `failing_for_a_day`): it kept failing.
- The address was not public at send time (the name now points inward): the delivery fails at once and the
  endpoint is disabled (`WEBHOOK_ADDRESS_NOT_PUBLIC`).
A report is applied once: only the report of the attempt the row is waiting for changes it.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import Connection, select, update

from leadcrm.directory.rules import Actor
from leadcrm.integrations.dispatch import dispatch
from leadcrm.integrations.rules.addresses import ADDRESS_NOT_PUBLIC
from leadcrm.integrations.rules.backoff import next_attempt_at
from leadcrm.integrations.subscriptions import disable, get
from leadcrm.integrations.tables import webhook_deliveries
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import Conflict, NotFound
from leadcrm.platform.ids import parse_uuid

logger = logging.getLogger(__name__)

ATTEMPTED = "webhook.delivery_attempted"
SUCCEEDED, FAILED, REFUSED = "succeeded", "failed", "refused"
FAILING_FOR_A_DAY = "failing_for_a_day"
MAX_ERROR = 300

DELIVERY_COLUMNS = tuple(c for c in webhook_deliveries.c if c.name != "payload")


def delivery_not_found() -> NotFound:
    return NotFound("No such webhook delivery.", code="WEBHOOK_DELIVERY_NOT_FOUND")


def record_attempt(conn: Connection, detail: dict[str, Any]) -> bool:
    """Apply one attempt's report; True when it changed the delivery."""
    delivery_id = parse_uuid(str(detail.get("deliveryId") or ""))
    attempt = detail.get("attempt")
    if delivery_id is None or not isinstance(attempt, int):
        return False
    row = (
        conn.execute(select(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id).with_for_update())
        .mappings()
        .first()
    )
    if row is None or row["status"] != "pending" or row["attempts"] >= attempt:
        return False  # a delivery deleted with its endpoint, finished, or a report already applied
    now = clock.now()
    first = row["first_attempt_at"] or now
    outcome = detail.get("outcome")
    values: dict[str, Any] = {
        "attempts": attempt,
        "first_attempt_at": first,
        "last_attempt_at": now,
        "response_code": detail.get("statusCode") if isinstance(detail.get("statusCode"), int) else None,
        "latency_ms": detail.get("latencyMs") if isinstance(detail.get("latencyMs"), int) else None,
        "last_error": str(detail["error"])[:MAX_ERROR] if detail.get("error") else None,
        "updated_at": sql_now(),
    }
    disable_reason = None
    if outcome == SUCCEEDED:
        values.update(status="succeeded", next_attempt_at=None)
    elif outcome == REFUSED:
        values.update(status="failed", next_attempt_at=None)
        disable_reason = str(detail.get("refusal") or ADDRESS_NOT_PUBLIC)
    else:
        retry_at = next_attempt_at(first, now, attempt)
        if retry_at is None:
            values.update(status="failed", next_attempt_at=None)
            disable_reason = FAILING_FOR_A_DAY
        else:
            values.update(next_attempt_at=retry_at)
    conn.execute(update(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id).values(**values))
    if disable_reason is not None:
        disable(conn, row["subscription_id"], disable_reason)
        logger.warning(
            "webhook endpoint disabled",
            extra={"subscriptionId": str(row["subscription_id"]), "reason": disable_reason},
        )
    return True


def get_delivery(
    conn: Connection,
    organization_id: uuid.UUID,
    subscription_id: uuid.UUID,
    delivery_id: uuid.UUID,
    *,
    lock: bool = False,
) -> dict[str, Any]:
    query = select(*DELIVERY_COLUMNS).where(
        webhook_deliveries.c.organization_id == organization_id,
        webhook_deliveries.c.subscription_id == subscription_id,
        webhook_deliveries.c.id == delivery_id,
    )
    row = conn.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise delivery_not_found()
    return dict(row)


def replay(conn: Connection, actor: Actor, subscription_id: uuid.UUID, delivery_id: uuid.UUID) -> dict[str, Any]:
    """Send a delivery again, with the same id (receivers deduplicate on it), as a new day of attempts.
    409 WEBHOOK_SUBSCRIPTION_DISABLED while its endpoint is disabled (enable it first)."""
    subscription = get(conn, actor.organization_id, subscription_id)
    get_delivery(conn, actor.organization_id, subscription_id, delivery_id, lock=True)
    if not subscription["enabled"]:
        raise Conflict("The endpoint is disabled; enable it first.", code="WEBHOOK_SUBSCRIPTION_DISABLED")
    conn.execute(
        update(webhook_deliveries)
        .where(webhook_deliveries.c.id == delivery_id)
        .values(status="pending", first_attempt_at=None, next_attempt_at=sql_now(), updated_at=sql_now())
    )
    dispatch(conn, [delivery_id])
    return get_delivery(conn, actor.organization_id, subscription_id, delivery_id)
