"""Meta webhooks behind a Lambda function URL: verify, enqueue, nothing else.

It touches no database and imports neither SQLAlchemy nor pydantic, so a cold start stays cheap and Meta
gets its 200 within milliseconds. Everything that needs the database happens in the ingestion function.

Any signed body gets an answer, never a 502: over 4 MiB a 413 (counted, `WebhookBodiesRefused`); JSON that
is malformed, nested over 32 levels or holds a 50-digit number a 400 MALFORMED_JSON (leadcrm.platform.
json_limits), a body that is no JSON object a 400; one too large for a queue message travels by claim check
(leadcrm.platform.adapters.webhook_bodies, counted as `WebhookBodiesStored`).
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging import correlation_paths

from leadcrm.ingestion.rules.webhooks import handshake_challenge, signature_is_valid
from leadcrm.platform import json_limits
from leadcrm.platform.adapters import webhook_bodies
from leadcrm.platform.telemetry import instrumented
from webhooks.secrets import meta_secrets

logger = Logger(service="leadcrm")

# Function URL path -> the ingestion job that will process it.
ROUTES = {"/webhooks/meta/leadgen": "meta.leadgen", "/webhooks/whatsapp": "whatsapp"}
# Where each kind is queued: a leadgen names a lead that must first be read from Graph, which only the
# graph_fetch function (outside the VPC) can reach; everything else goes straight to ingestion.
QUEUE_URL_VARIABLES = {"meta.leadgen": "GRAPH_FETCH_QUEUE_URL"}


def _respond(status: int, body: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(body, str):
        return {"statusCode": status, "headers": {"content-type": "text/plain"}, "body": body}
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


def _error(status: int, code: str, message: str) -> dict[str, Any]:
    return _respond(status, {"error": {"code": code, "message": message}})


def _raw_body(event: dict[str, Any]) -> bytes:
    body = event.get("body") or ""
    return base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()


def _enqueue(kind: str, payload: Any, raw: bytes) -> str:
    from leadcrm.platform.adapters.aws import client

    message, stored = webhook_bodies.queue_message(kind, payload, raw)
    if stored:
        _count("WebhookBodiesStored", kind)
    response = client("sqs").send_message(
        QueueUrl=os.environ[QUEUE_URL_VARIABLES.get(kind, "INGESTION_QUEUE_URL")],
        MessageBody=message,
        MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
    )
    return response["MessageId"]


def _count(metric: str, kind: str) -> None:
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    with single_metric(name=metric, unit=MetricUnit.Count, value=1, namespace="LeadCRM") as counted:
        counted.add_dimension(name="kind", value=kind)


def _too_large(kind: str) -> dict[str, Any]:
    _count("WebhookBodiesRefused", kind)
    logger.warning("refused webhook: body too large", extra={"kind": kind})
    limit = webhook_bodies.MAX_BODY_BYTES
    return _error(413, "BODY_TOO_LARGE", f"The body is larger than {limit} bytes.")


@instrumented(correlation_id_path=correlation_paths.LAMBDA_FUNCTION_URL)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    path = event.get("rawPath", "")
    method = event.get("requestContext", {}).get("http", {}).get("method", "")
    kind = ROUTES.get(path)
    if kind is None:
        return _error(404, "ROUTE_NOT_FOUND", "No such route.")
    secrets = meta_secrets()
    if method == "GET":
        challenge = handshake_challenge(event.get("queryStringParameters") or {}, secrets.verify_token)
        if challenge is None:
            return _error(403, "VERIFICATION_FAILED", "The verify token does not match.")
        return _respond(200, challenge)
    if method != "POST":
        return _error(405, "METHOD_NOT_ALLOWED", "Use GET for the handshake and POST for notifications.")
    try:
        raw = _raw_body(event)
    except ValueError:  # base64 that does not decode, text that is no UTF-8
        return _error(400, "MALFORMED_JSON", "The body cannot be read.")
    if len(raw) > webhook_bodies.MAX_BODY_BYTES:
        return _too_large(kind)
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    if not signature_is_valid(secrets.app_secret, raw, headers.get("x-hub-signature-256")):
        logger.warning("rejected webhook: bad signature", extra={"kind": kind})
        return _error(401, "INVALID_SIGNATURE", "X-Hub-Signature-256 is missing or does not match.")
    try:
        payload = json_limits.loads(raw)
    except json_limits.JsonRefused as refused:
        return _error(refused.status, refused.code, refused.message)
    if not isinstance(payload, dict):  # Meta always sends an object: nothing else could ever be a lead
        return _error(400, "VALIDATION_FAILED", "The body must be a JSON object.")
    try:
        message_id = _enqueue(kind, payload, raw)
    except webhook_bodies.NoBucket:
        return _too_large(kind)
    logger.info("webhook enqueued", extra={"kind": kind, "messageId": message_id})
    return _respond(200, {"received": True})
