"""Hands due deliveries to the webhook_delivery function: each body built and signed here, in the VPC, where
the secret and the lead's contact are; the function outside the VPC only checks the address and posts.

A delivery handed over is leased (`next_attempt_at` moves LEASE ahead): the function reports every attempt
back (deliveries.record_attempt), which sets the next time or ends it; a delivery whose report never came
(a message lost, a function that died) is due again when its lease ends, and the sweep sends it again with
the same `webhook-id`. An enqueue that fails leaves the delivery due, for the sweep: nothing is lost and the
caller's work is never undone by a queue outage.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Uuid, any_, cast, literal, select, update
from sqlalchemy.dialects.postgresql import ARRAY

from leadcrm.directory.rules import enabled_features
from leadcrm.directory.tables import organizations
from leadcrm.integrations.rules.events import LEAD_EVENTS
from leadcrm.integrations.rules.signing import signed_headers
from leadcrm.integrations.subscriptions import PERSONAL_DATA_FEATURE
from leadcrm.integrations.tables import webhook_deliveries, webhook_subscriptions
from leadcrm.leads.tables import leads
from leadcrm.platform import clock
from leadcrm.platform.adapters.aws import client
from leadcrm.platform.db.now import sql_now

logger = logging.getLogger(__name__)

QUEUE_URL = "WEBHOOK_DELIVERY_QUEUE_URL"
# Longer than the function's visibility timeout (9 minutes: a batch of 5 posts at up to 15 s each, six times over):
# a report that is only late does not make the sweep send again.
LEASE = timedelta(minutes=10)
SQS_BATCH = 10


def _ids(values: Sequence[uuid.UUID]) -> Any:
    return cast(literal("{" + ",".join(str(v) for v in values) + "}"), ARRAY(Uuid))


def body_of(delivery: dict[str, Any], contact: dict[str, Any] | None) -> str:
    """The JSON a receiver gets (README "Outbound webhooks"): Standard Webhooks' `type`, `timestamp`, `data`."""
    data = dict(delivery["payload"])
    if contact is not None:
        data["contact"] = contact
    return json.dumps(
        {
            "type": delivery["event_type"],
            "timestamp": delivery["occurred_at"].isoformat(),
            "eventId": str(delivery["event_id"]),
            "organizationId": str(delivery["organization_id"]),
            "data": data,
        },
        separators=(",", ":"),
    )


def _rows(conn: Connection, delivery_ids: Sequence[uuid.UUID]) -> list[dict[str, Any]]:
    query = (
        select(
            webhook_deliveries,
            webhook_subscriptions.c.url,
            webhook_subscriptions.c.secret,
            webhook_subscriptions.c.include_personal_data,
            organizations.c.features,
        )
        .join(webhook_subscriptions, webhook_subscriptions.c.id == webhook_deliveries.c.subscription_id)
        .join(organizations, organizations.c.id == webhook_deliveries.c.organization_id)
        .where(webhook_deliveries.c.id == any_(_ids(delivery_ids)))
    )
    return [dict(r) for r in conn.execute(query).mappings()]


def _contacts(conn: Connection, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The contact of each lead a delivery may carry it for: the subscription asked and the plan allows."""
    wanted = {
        str(r["payload"].get("leadId"))
        for r in rows
        if r["event_type"] in LEAD_EVENTS
        and r["include_personal_data"]
        and PERSONAL_DATA_FEATURE in enabled_features(r["features"])
        and r["payload"].get("leadId")
    }
    if not wanted:
        return {}
    found = conn.execute(
        select(leads.c.id, leads.c.name, leads.c.email, leads.c.phone).where(
            leads.c.id == any_(_ids([uuid.UUID(w) for w in wanted]))
        )
    ).mappings()
    return {str(r["id"]): {"name": r["name"], "email": r["email"], "phone": r["phone"]} for r in found}


def dispatch(conn: Connection, delivery_ids: Sequence[uuid.UUID]) -> int:
    """Enqueue these deliveries (in the caller's transaction) and lease them; how many were handed over."""
    if not delivery_ids:
        return 0
    url = os.environ.get(QUEUE_URL)
    if not url:
        logger.warning("no webhook delivery queue; deliveries left to the sweep", extra={"count": len(delivery_ids)})
        return 0
    rows = _rows(conn, delivery_ids)
    contacts = _contacts(conn, rows)
    timestamp = int(clock.now().timestamp())
    messages = []
    for row in rows:
        contact = contacts.get(str(row["payload"].get("leadId"))) if row["event_type"] in LEAD_EVENTS else None
        body = body_of(row, contact)
        delivery_id = str(row["id"])
        messages.append(
            {
                "deliveryId": delivery_id,
                "subscriptionId": str(row["subscription_id"]),
                "organizationId": str(row["organization_id"]),
                "attempt": row["attempts"] + 1,
                "url": row["url"],
                "headers": signed_headers(row["secret"], delivery_id, timestamp, body),
                "body": body,
            }
        )
    sent: list[uuid.UUID] = []
    sqs = client("sqs")
    for start in range(0, len(messages), SQS_BATCH):
        chunk = messages[start : start + SQS_BATCH]
        try:
            result = sqs.send_message_batch(
                QueueUrl=url,
                Entries=[{"Id": str(i), "MessageBody": json.dumps(m)} for i, m in enumerate(chunk)],
            )
        except Exception:
            logger.exception("webhook deliveries not enqueued; left to the sweep")
            continue
        sent += [uuid.UUID(chunk[int(ok["Id"])]["deliveryId"]) for ok in result.get("Successful", [])]
    if sent:
        conn.execute(
            update(webhook_deliveries)
            .where(webhook_deliveries.c.id == any_(_ids(sent)))
            .values(next_attempt_at=sql_now() + LEASE, updated_at=sql_now())
        )
    return len(sent)
