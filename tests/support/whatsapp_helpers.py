"""Helpers for the WhatsApp conversation tests: webhook payloads (inbound and status) as the Cloud API sends
them, the Cloud API stand-in over real HTTP, the send route, and graph_fetch + ingestion run on what was
queued."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import select, update

from infra.local.whatsapp import LocalWhatsApp, serve
from leadcrm.conversations.tables import conversation_messages
from leadcrm.platform.db.engine import get_engine
from tests.support.api import ApiResponse, call_api
from tests.support.aws import aws_client
from tests.support.events import lambda_context, sqs_event, sqs_record
from tests.support.factories import StaffCaller
from tests.support.ingestion_helpers import deliver, webhook_message, whatsapp_payload

APPROVED_TEMPLATE = {
    "name": "trial_reminder",
    "language": "en_US",
    "status": "APPROVED",
    "category": "UTILITY",
    "components": [{"type": "BODY", "text": "Hi {{1}}, your trial class is on {{2}}."}],
}


@contextmanager
def whatsapp_stand_in(monkeypatch: Any) -> Iterator[LocalWhatsApp]:
    """The Cloud API over real HTTP where META_GRAPH_BASE_URL points; tokens read afresh from moto."""
    from leadcrm.platform.adapters.integration_secrets import forget_cached_tokens

    stand_in = LocalWhatsApp()
    forget_cached_tokens()
    with serve(stand_in) as url:
        monkeypatch.setenv("META_GRAPH_BASE_URL", url)
        yield stand_in
    forget_cached_tokens()


def wamid() -> str:
    return f"wamid.{uuid.uuid4().hex}"


def inbound(phone_number_id: str, wa_id: str, text: str = "Hi, is there a class tonight?", **kwargs: Any) -> dict:
    """The ingestion queue message of an inbound text message webhook."""
    return webhook_message(
        "whatsapp",
        whatsapp_payload(phone_number_id, wamid=kwargs.pop("wamid", None) or wamid(), wa_id=wa_id, text=text, **kwargs),
    )


def status_payload(
    phone_number_id: str, message_wamid: str, status: str, *, timestamp: int = 1767225600, errors: list | None = None
) -> dict[str, Any]:
    """A WhatsApp Cloud status webhook about one outbound message."""
    entry: dict[str, Any] = {
        "id": message_wamid,
        "status": status,
        "timestamp": str(timestamp),
        "recipient_id": "447700900456",
    }
    if errors is not None:
        entry["errors"] = errors
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_number_id},
                            "statuses": [entry],
                        },
                    }
                ],
            }
        ],
    }


def deliver_status(phone_number_id: str, message_wamid: str, status: str, **kwargs: Any) -> dict[str, Any]:
    return deliver(webhook_message("whatsapp", status_payload(phone_number_id, message_wamid, status, **kwargs)))


def send_whatsapp(
    caller: StaffCaller, conversation_id: Any, body: dict[str, Any], *, key: str | None = None
) -> ApiResponse:
    return call_api(
        "POST",
        f"/organizations/{caller.org_id}/conversations/{conversation_id}/whatsapp-messages",
        sub=caller.sub,
        body=body,
        headers={"idempotency-key": key} if key else None,
    )


def _drain(url: str) -> list[dict[str, Any]]:
    sqs, bodies = aws_client("sqs"), []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies.extend(json.loads(m["Body"]) for m in messages)
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )
    return bodies


def run_graph_fetch() -> dict[str, Any]:
    """What the API queued for graph_fetch, through graph_fetch (Graph: the stand-in), then what it queued
    back through ingestion, as the pollers do in the local stack. Ingestion's partial batch response."""
    from graph_fetch.handler import lambda_handler

    requests = _drain(os.environ["GRAPH_FETCH_QUEUE_URL"])
    if requests:
        answer = lambda_handler(
            sqs_event(*(sqs_record(body) for body in requests)), lambda_context("leadcrm-graph-fetch")
        )
        assert answer == {"batchItemFailures": []}, answer
    results = _drain(os.environ["INGESTION_QUEUE_URL"])
    return deliver(*results) if results else {"batchItemFailures": []}


def message_row(message_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        query = select(conversation_messages).where(conversation_messages.c.id == uuid.UUID(str(message_id)))
        return dict(conn.execute(query).mappings().one())


def age_messages(conversation_id: Any, **delta: float) -> None:
    """Every message of the thread written earlier by `delta` (timedelta arguments): the clock played back."""
    from datetime import timedelta

    with get_engine().begin() as conn:
        conn.execute(
            update(conversation_messages)
            .where(conversation_messages.c.conversation_id == uuid.UUID(str(conversation_id)))
            .values(created_at=conversation_messages.c.created_at - timedelta(**delta))
        )
