"""Builders for the events Lambda really receives, in the shapes AWS documents.

- API Gateway HTTP API, payload format 2.0, behind the JWT authorizer (`http_api_event`)
- Lambda function URL, the same 2.0 format without an authorizer (`function_url_event`)
- SQS batches (`sqs_event`, `sqs_record`, `sqs_record_from_message` for a message moto delivered)
- EventBridge envelopes as they arrive in an SQS body (`eventbridge_envelope`)
- a stand-in for the Lambda context object (`lambda_context`)
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

ACCOUNT_ID = "123456789012"
REGION = "eu-west-1"
API_ID = "a1b2c3d4e5"
FUNCTION_URL_ID = "abcdefghijklmnopqrstuvwxyz012345"


@dataclass
class FakeLambdaContext:
    """What Powertools reads from the real context (inject_lambda_context, the batch processor)."""

    function_name: str = "leadcrm-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:leadcrm-test"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/leadcrm-test"
    log_stream_name: str = "2026/01/01/[$LATEST]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def lambda_context(function_name: str = "leadcrm-test") -> FakeLambdaContext:
    return FakeLambdaContext(
        function_name=function_name,
        invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function_name}",
    )


def _request_time() -> tuple[str, int]:
    now = datetime.now(UTC)
    return now.strftime("%d/%b/%Y:%H:%M:%S +0000"), int(now.timestamp() * 1000)


def _query(query: dict[str, str] | str | None) -> tuple[str, dict[str, str] | None]:
    if query is None or query == "" or query == {}:
        return "", None
    if isinstance(query, str):
        raw = query
        # API Gateway joins repeated parameters with commas in queryStringParameters.
        params: dict[str, str] = {}
        for name, value in parse_qsl(raw, keep_blank_values=True):
            params[name] = f"{params[name]},{value}" if name in params else value
        return raw, params
    return urlencode(query), dict(query)


def _body(body: Any, is_base64: bool) -> tuple[str | None, bool]:
    if body is None:
        return None, False
    if isinstance(body, bytes):
        raw = body
    elif isinstance(body, str):
        raw = body.encode()
    else:
        raw = json.dumps(body).encode()
    if is_base64:
        return base64.b64encode(raw).decode(), True
    return raw.decode(), False


def http_api_event(
    method: str,
    path: str,
    *,
    sub: str | None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | str | None = None,
    is_base64: bool = False,
    claims: dict[str, str] | None = None,
    authorizer: bool = True,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event for an authorized route `METHOD /organizations/{proxy+}`.

    `sub=None` leaves the `sub` claim out (the authorizer passed a token without one); `authorizer=False`
    leaves the whole authorizer block out. A dict/list body is sent as JSON text, bytes/str as given.
    JWT claims arrive as strings, as API Gateway passes them.
    """
    method = method.upper()
    raw_query, params = _query(query)
    text, encoded = _body(body, is_base64)
    request_time, epoch = _request_time()
    all_claims = {
        "iss": "https://issuer.example.test/",
        "aud": "leadcrm-dashboard",
        "iat": str(epoch // 1000 - 60),
        "exp": str(epoch // 1000 + 3600),
        **({"sub": sub} if sub is not None else {}),
        **(claims or {}),
    }
    route_key = f"{method} /organizations/{{proxy+}}" if path.startswith("/organizations/") else f"{method} {path}"
    all_headers = {
        "accept": "application/json",
        "authorization": "Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl",
        "content-length": str(len(text or "")),
        "host": f"{API_ID}.execute-api.{REGION}.amazonaws.com",
        "user-agent": "pytest",
        "x-amzn-trace-id": "Root=1-65a1b2c3-0123456789abcdef01234567",
        "x-forwarded-for": "192.0.2.10",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None:
        all_headers["content-type"] = "application/json"
    all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
    request_context: dict[str, Any] = {
        "accountId": ACCOUNT_ID,
        "apiId": API_ID,
        "domainName": f"{API_ID}.execute-api.{REGION}.amazonaws.com",
        "domainPrefix": API_ID,
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "192.0.2.10",
            "userAgent": "pytest",
        },
        "requestId": base64.b32encode(uuid.uuid4().bytes[:10]).decode().rstrip("="),
        "routeKey": route_key,
        "stage": "$default",
        "time": request_time,
        "timeEpoch": epoch,
    }
    if authorizer:
        request_context["authorizer"] = {"jwt": {"claims": all_claims, "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": all_headers,
        "requestContext": request_context,
        "isBase64Encoded": encoded,
    }
    if params is not None:
        event["queryStringParameters"] = params
    if path.startswith("/organizations/"):
        event["pathParameters"] = {"proxy": path.removeprefix("/organizations/")}
    if text is not None:
        event["body"] = text
    return event


def function_url_event(
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | str | None = None,
    is_base64: bool = False,
) -> dict[str, Any]:
    """A Lambda function URL event (payload 2.0, auth type NONE: no authorizer block, routeKey `$default`)."""
    method = method.upper()
    raw_query, params = _query(query)
    text, encoded = _body(body, is_base64)
    request_time, epoch = _request_time()
    domain = f"{FUNCTION_URL_ID}.lambda-url.{REGION}.on.aws"
    all_headers = {
        "accept": "*/*",
        "host": domain,
        "user-agent": "facebookexternalua",
        "x-amzn-trace-id": "Root=1-65a1b2c3-0123456789abcdef01234567",
        "x-forwarded-for": "198.51.100.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None:
        all_headers["content-type"] = "application/json"
        all_headers["content-length"] = str(len(text or ""))
    all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": all_headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": FUNCTION_URL_ID,
            "domainName": domain,
            "domainPrefix": FUNCTION_URL_ID,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "198.51.100.7",
                "userAgent": "facebookexternalua",
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": request_time,
            "timeEpoch": epoch,
        },
        "isBase64Encoded": encoded,
    }
    if params is not None:
        event["queryStringParameters"] = params
    if text is not None:
        event["body"] = text
    return event


def queue_arn(queue_name: str = "leadcrm-ingestion") -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{queue_name}"


def sqs_record(
    body: Any,
    *,
    message_id: str | None = None,
    message_attributes: dict[str, dict[str, Any]] | None = None,
    queue_name: str = "leadcrm-ingestion",
    receive_count: int = 1,
) -> dict[str, Any]:
    """One record of an SQS event as Lambda's event source mapping hands it over."""
    text = body if isinstance(body, str) else json.dumps(body)
    now_ms = str(int(time.time() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": base64.b64encode(uuid.uuid4().bytes * 3).decode(),
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": now_ms,
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": now_ms,
        },
        "messageAttributes": message_attributes or {},
        "md5OfBody": hashlib.md5(text.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn(queue_name),
        "awsRegion": REGION,
    }


def sqs_record_from_message(message: dict[str, Any], *, queue_name: str) -> dict[str, Any]:
    """The Lambda record for a message received with boto3 `receive_message` (e.g. one moto delivered)."""
    attributes = {
        name: {
            "stringValue": value.get("StringValue"),
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": value["DataType"],
        }
        for name, value in (message.get("MessageAttributes") or {}).items()
    }
    system = message.get("Attributes") or {}
    record = sqs_record(
        message["Body"], message_id=message["MessageId"], message_attributes=attributes, queue_name=queue_name
    )
    record["receiptHandle"] = message["ReceiptHandle"]
    record["md5OfBody"] = message["MD5OfBody"]
    record["attributes"].update({k: v for k, v in system.items() if k in record["attributes"]})
    return record


def sqs_event(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


def eventbridge_envelope(
    detail_type: str,
    detail: dict[str, Any],
    *,
    source: str = "leadcrm",
    event_id: str | None = None,
    time_: datetime | None = None,
    resources: list[str] | None = None,
) -> dict[str, Any]:
    """An EventBridge event as a rule's SQS target puts it in the message body."""
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT_ID,
        "time": (time_ or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": resources or [],
        "detail": detail,
    }
