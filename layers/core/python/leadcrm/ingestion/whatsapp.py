"""WhatsApp conversations, where they meet the connections: which organization a webhook's number belongs to,
and which numbers an organization sends from. The conversation work itself is leadcrm.conversations.whatsapp.

- `receive_webhook` (`receive_webhooks` for a batch of them): every inbound message and status update of a
  WhatsApp webhook, each routed by its phone_number_id to the number's active connection (none: dropped and
  counted `no_connection`), in one unit of work. `record_webhooks` does the same in the caller's unit of
  work: the ingestion function's SQS batch records its webhooks in the unit of work that took in their
  click-to-WhatsApp referrals as leads (leadcrm.ingestion.webhook_leads), after them, so a referral's own
  message lands in the thread of the lead it made.
- `sending_numbers`: the organization's connected phone number ids, oldest connection first.
- `record_send_outcome`, `store_synced_templates`: what graph_fetch queued back after calling Graph.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, select

from leadcrm.conversations import whatsapp as conversations_whatsapp
from leadcrm.conversations.rules.whatsapp import WhatsAppStatus
from leadcrm.conversations.whatsapp_inbound import Addressed, InboundMessage, record_inbound_many
from leadcrm.ingestion.connections import ACTIVE, ActiveConnection, active_connections
from leadcrm.ingestion.rules.meta import WHATSAPP_PROVIDER, whatsapp_messages, whatsapp_statuses
from leadcrm.ingestion.tables import integration_connections
from leadcrm.platform import clock
from leadcrm.platform.db.uow import UnitOfWork

logger = logging.getLogger(__name__)

NO_CONNECTION = "no_connection"


def receive_webhook(payload: dict[str, Any]) -> Counter[str]:
    """Record the webhook's messages and statuses; the outcomes counted (`message.recorded`,
    `message.duplicate`, `message.no_lead`, `status.applied`, `status.replayed`, `*.no_connection`)."""
    return receive_webhooks([payload])


def receive_webhooks(payloads: list[dict[str, Any]], known_leads: dict[str, uuid.UUID] | None = None) -> Counter[str]:
    """`receive_webhook` for the webhooks of one SQS batch, in one unit of work of their own (one commit, one
    publish): `record_webhooks`."""
    accounts = webhook_accounts(payloads)
    if not accounts:  # no message and no status: nothing to record
        return Counter()
    with UnitOfWork() as uow:
        outcomes = record_webhooks(uow, active_connections(uow.connection, accounts), payloads, known_leads)
        uow.commit()
    return outcomes


def webhook_accounts(payloads: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """The (provider, phone_number_id) accounts the webhooks' messages and statuses route on."""
    return {
        (WHATSAPP_PROVIDER, item.phone_number_id)
        for payload in payloads
        for item in [*whatsapp_messages(payload), *whatsapp_statuses(payload)]
    }


def record_webhooks(
    uow: UnitOfWork,
    connections: Mapping[tuple[str, str], ActiveConnection],
    payloads: list[dict[str, Any]],
    known_leads: dict[str, uuid.UUID] | None = None,
) -> Counter[str]:
    """The webhooks' messages and statuses in the caller's unit of work, routed on `connections` (looked up in
    it: `webhook_accounts` names what they need). The messages are recorded set-based
    (whatsapp_inbound.record_inbound_many). `known_leads` (wamid → lead) names the leads the batch's referrals
    were just taken in as, so they are not looked up."""
    messages = [message for payload in payloads for message in whatsapp_messages(payload)]
    statuses = [status for payload in payloads for status in whatsapp_statuses(payload)]
    outcomes: Counter[str] = Counter()
    known_leads = known_leads or {}
    addressed = []
    for message in messages:
        connection = connections.get((WHATSAPP_PROVIDER, message.phone_number_id))
        if connection is None:
            outcomes[f"message.{NO_CONNECTION}"] += 1
            continue
        inbound = InboundMessage(
            phone_number_id=message.phone_number_id,
            wamid=message.wamid,
            wa_id=message.wa_id,
            text=message.text,
            message_type=message.message_type,
        )
        addressed.append(Addressed(connection.organization_id, inbound, known_leads.get(message.wamid)))
    if addressed:
        outcomes.update(f"message.{outcome}" for outcome in record_inbound_many(uow, addressed))
    for status in statuses:
        connection = connections.get((WHATSAPP_PROVIDER, status.phone_number_id))
        if connection is None:
            outcomes[f"status.{NO_CONNECTION}"] += 1
            continue
        occurred_at = datetime.fromtimestamp(status.timestamp, UTC) if status.timestamp is not None else clock.now()
        update = conversations_whatsapp.StatusUpdate(
            wamid=status.wamid, status=WhatsAppStatus(status.status), occurred_at=occurred_at, errors=status.errors
        )
        applied = conversations_whatsapp.apply_status(uow.connection, connection.organization_id, update)
        outcomes["status.applied" if applied else "status.replayed"] += 1
    if outcomes:
        logger.info("whatsapp webhook recorded", extra={"outcomes": dict(outcomes)})
    return outcomes


def sending_numbers(conn: Connection, organization_id: uuid.UUID) -> list[str]:
    """The organization's connected WhatsApp phone number ids, oldest connection first."""
    return list(
        conn.execute(
            select(integration_connections.c.external_account_id)
            .where(
                integration_connections.c.organization_id == organization_id,
                integration_connections.c.provider == WHATSAPP_PROVIDER,
                integration_connections.c.status == ACTIVE,
            )
            .order_by(integration_connections.c.connected_at, integration_connections.c.id)
        ).scalars()
    )


def record_send_outcome(
    organization_id: uuid.UUID, message_id: uuid.UUID, *, wamid: str | None, error: str | None
) -> str:
    """A `whatsapp.sent` message from graph_fetch: the message `sent` with its wamid, or `failed`."""
    with UnitOfWork() as uow:
        outcome = conversations_whatsapp.record_send_result(uow, organization_id, message_id, wamid=wamid, error=error)
        uow.commit()
    logger.info("whatsapp send recorded", extra={"messageId": str(message_id), "outcome": outcome})
    return outcome


def store_synced_templates(
    organization_id: uuid.UUID, business_account_id: str, templates: list[dict[str, Any]]
) -> int:
    """A `whatsapp.templates` message from graph_fetch: the account's templates replace the stored ones."""
    with UnitOfWork() as uow:
        stored = conversations_whatsapp.store_templates(uow.connection, organization_id, business_account_id, templates)
        uow.commit()
    logger.info("whatsapp templates synced", extra={"organizationId": str(organization_id), "templates": stored})
    return stored
