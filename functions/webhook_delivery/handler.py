"""webhook_delivery: posts signed webhook deliveries to their endpoints, outside the VPC, and reports each result.

The functions in the VPC have no route to the internet (isolated subnets, no NAT gateway); this one does and
touches no database. Each SQS message is one attempt, built and signed in the VPC
(leadcrm.integrations.dispatch): `{deliveryId, subscriptionId, organizationId, attempt, url, headers, body}`.
It resolves the endpoint's name again and refuses any address that is not public (a name that pointed at a
public address when saved may point inward now), then connects to the address it checked (no second lookup
that could answer differently), with TLS verified against the name, follows no redirect, and gives up after
CONNECT_TIMEOUT / READ_TIMEOUT. The result goes on the bus as `webhook.delivery_attempted` (source
`leadcrm.webhook_delivery`), which the bus's rule routes to task_lifecycle in the VPC (leadcrm.integrations.
deliveries) to record it and schedule the retry. Only a report that cannot be put on the bus fails the record
(SQS retries it; the post is repeated with the same `webhook-id`, which receivers deduplicate on).

Like graph_fetch it imports neither SQLAlchemy nor pydantic (an import contract holds it).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from leadcrm.integrations.endpoints import checked_target
from leadcrm.integrations.rules.addresses import Address, Refused, Target
from leadcrm.platform import clock, json_limits
from leadcrm.platform.adapters.aws import client
from leadcrm.platform.failures import json_object, reading, rejecting_permanent
from leadcrm.platform.telemetry import instrumented

logger = Logger(service="leadcrm")
processor = BatchProcessor(event_type=EventType.SQS)

SOURCE = "leadcrm.webhook_delivery"
ATTEMPTED = "webhook.delivery_attempted"
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
USER_AGENT = "LeadCRM-Webhooks/1"


@dataclass(frozen=True)
class Outcome:
    outcome: str  # succeeded | failed | refused
    status_code: int | None = None
    latency_ms: int | None = None
    error: str | None = None
    refusal: str | None = None


def tls_context() -> ssl.SSLContext:
    """The system's trust store, hostname checked (a test trusts its own certificate here)."""
    return ssl.create_default_context()


def _connect_to_one_of(addresses: list[Address], port: int) -> socket.socket:
    """The first of the checked addresses that answers (a name may give IPv6 and IPv4; one may be down)."""
    failure: OSError = OSError("no address")
    for address in addresses:
        try:
            return socket.create_connection((str(address), port), timeout=CONNECT_TIMEOUT)
        except OSError as error:
            failure = error
    raise failure


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to the address we checked, TLS verified against the URL's name (SNI and certificate)."""

    def __init__(self, target: Target, addresses: list[Address], timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=tls_context())
        self._addresses = addresses

    def connect(self) -> None:
        sock = _connect_to_one_of(self._addresses, self.port)
        sock.settimeout(self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Plain http, only ever to an allow-listed address (local receivers)."""

    def __init__(self, target: Target, addresses: list[Address], timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._addresses = addresses

    def connect(self) -> None:
        self.sock = _connect_to_one_of(self._addresses, self.port)
        self.sock.settimeout(self.timeout)


def post(url: str, headers: dict[str, str], body: str) -> Outcome:
    """One attempt: refused before connecting when an address is not public, else the endpoint's answer."""
    try:
        target, addresses = checked_target(url)
    except Refused as refused:
        return Outcome("refused", error=refused.message, refusal=refused.code)
    kind = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    started = time.monotonic()
    connection = kind(target, addresses, READ_TIMEOUT)
    try:
        connection.request("POST", target.path, body=body.encode(), headers={**headers, "user-agent": USER_AGENT})
        response = connection.getresponse()
        response.read(64 * 1024)  # the answer's body is not kept; read a little so the connection closes cleanly
        status = response.status
    except (OSError, http.client.HTTPException) as error:
        return Outcome("failed", latency_ms=_since(started), error=f"{type(error).__name__}")
    finally:
        connection.close()
    return Outcome("succeeded" if 200 <= status < 300 else "failed", status_code=status, latency_ms=_since(started))


def _since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def report(message: dict[str, Any], outcome: Outcome) -> None:
    detail = {
        "deliveryId": message["deliveryId"],
        "subscriptionId": message.get("subscriptionId"),
        "organizationId": message.get("organizationId"),
        "attempt": message["attempt"],
        "outcome": outcome.outcome,
        "statusCode": outcome.status_code,
        "latencyMs": outcome.latency_ms,
        "error": outcome.error,
        "refusal": outcome.refusal,
        "attemptedAt": clock.now().isoformat(),
    }
    result = client("events").put_events(
        Entries=[
            {
                "Source": SOURCE,
                "DetailType": ATTEMPTED,
                "Detail": json.dumps(detail),
                "EventBusName": os.environ["EVENT_BUS_NAME"],
            }
        ]
    )
    if result.get("FailedEntryCount"):
        raise RuntimeError(f"the bus refused the report: {result['Entries'][0].get('ErrorCode')}")


@rejecting_permanent("webhook_delivery", lambda record: record.message_id)
def record_handler(record: SQSRecord, lambda_context: Any = None) -> str:
    with reading("webhook delivery"):
        message = json_object(json_limits.loads(record.body), "the SQS body")
        url, headers, body = str(message["url"]), dict(message["headers"]), str(message["body"])
        int(message["attempt"])
    outcome = post(url, headers, body)
    log = logger.info if outcome.outcome == "succeeded" else logger.warning
    log(
        "webhook attempted",
        extra={
            "deliveryId": message["deliveryId"],
            "attempt": message["attempt"],
            "outcome": outcome.outcome,
            "statusCode": outcome.status_code,
            "latencyMs": outcome.latency_ms,
        },
    )
    report(message, outcome)
    return outcome.outcome


@instrumented()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
