"""graph_fetch's WhatsApp work: the calls to the Cloud API that the functions in the VPC cannot make.

- `whatsapp.send` (queued by the API after it committed the message as `queued`): read the number's token
  (the secret is named after the phone number id), POST the message, and queue the outcome for ingestion as
  `whatsapp.sent`: the wamid, or Graph's refusal of this message (`code: title`). No secret for the number
  (disconnected since) is a refusal too. An outage, throttling or a rejected token raises: the record is
  retried and parked in the graph-fetch DLQ after the receive limit (the message stays `queued`).
- `whatsapp.templates_sync` (queued by the sync route): list the WhatsApp Business account's templates with
  the number's token and queue them for ingestion as `whatsapp.templates`.

A send is at least once towards Graph only when its answer was lost (a timeout after Graph took it, then a
retry): ingestion keeps the first outcome, so the thread shows one message.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from leadcrm.ingestion import whatsapp_graph
from leadcrm.ingestion.rules.meta import WHATSAPP_PROVIDER
from leadcrm.platform.adapters import ingestion_queue, integration_secrets

logger = Logger(service="leadcrm")

SEND_KIND, SYNC_KIND = "whatsapp.send", "whatsapp.templates_sync"
SENT_KIND, TEMPLATES_KIND = "whatsapp.sent", "whatsapp.templates"
KINDS = frozenset({SEND_KIND, SYNC_KIND})


SEND_FIELDS = ("organizationId", "messageId", "phoneNumberId", "to")
SYNC_FIELDS = ("organizationId", "businessAccountId", "phoneNumberId")


def read(body: dict[str, Any]) -> dict[str, Any]:
    """The record's request, its ids checked (a KeyError or TypeError is the message's fault: rejected)."""
    if body["kind"] == SEND_KIND:
        request = body["send"]
        if not isinstance(request, dict) or not all(isinstance(request.get(f), str) for f in SEND_FIELDS):
            raise TypeError("a whatsapp.send without its ids")
        return {"kind": SEND_KIND, **request}
    if not all(isinstance(body.get(f), str) for f in SYNC_FIELDS):
        raise TypeError("a whatsapp.templates_sync without its ids")
    return body


def handle(request: dict[str, Any]) -> str:
    """One WhatsApp request; its outcome (`sent`, `refused`, `no_secret`, `synced`)."""
    if request["kind"] == SEND_KIND:
        return send(request)
    return sync_templates(request)


def send(request: dict[str, Any]) -> str:
    ids = {"organizationId": request["organizationId"], "messageId": request["messageId"]}
    token = integration_secrets.read_account_token(WHATSAPP_PROVIDER, str(request["phoneNumberId"]))
    if token is None:
        ingestion_queue.enqueue(SENT_KIND, {**ids, "error": "no_connection: the number is not connected"})
        logger.warning("whatsapp send refused: no secret", extra=ids)
        return "no_secret"
    try:
        wamid = whatsapp_graph.send_message(str(request["phoneNumberId"]), token, request)
    except whatsapp_graph.SendRefused as refused:
        ingestion_queue.enqueue(SENT_KIND, {**ids, "error": str(refused)})
        logger.warning("whatsapp send refused by Graph", extra={**ids, "code": refused.code})
        return "refused"
    ingestion_queue.enqueue(SENT_KIND, {**ids, "wamid": wamid})
    logger.info("whatsapp message sent", extra=ids)
    return "sent"


def sync_templates(body: dict[str, Any]) -> str:
    ids = {"organizationId": body["organizationId"], "businessAccountId": body["businessAccountId"]}
    token = integration_secrets.read_account_token(WHATSAPP_PROVIDER, str(body["phoneNumberId"]))
    if token is None:
        logger.warning("whatsapp templates not synced: no secret", extra=ids)
        return "no_secret"
    templates = whatsapp_graph.list_templates(str(body["businessAccountId"]), token)
    ingestion_queue.enqueue(TEMPLATES_KIND, {**ids, "templates": templates})
    return "synced"
