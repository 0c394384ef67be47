"""The Meta Graph API, for the calls the functions outside the VPC make: graph_fetch reads a Lead Ads lead by its
leadgen id; meta_events sends CRM events to a dataset (Conversions API for CRM).

The base URL is configuration (META_GRAPH_BASE_URL): the local stack and the tests point it at a stand-in.
The token goes in the Authorization header, never in the URL, so it cannot end up in an access log.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from leadcrm.ingestion.rules.meta import FETCHED_LEAD_FIELDS
from leadcrm.platform.failures import TransientFailure

DEFAULT_BASE_URL = "https://graph.facebook.com/v21.0"
LEAD_FIELDS = ",".join(FETCHED_LEAD_FIELDS)
TIMEOUT_SECONDS = 5
# Graph error codes worth a retry although they come with a 4xx: temporary errors (1, 2), rate limits
# (4, 17, 32, 613), token trouble (102 session, 190 invalid or expired token) and permissions (10, 200-299:
# the page's grant to the app), which a reconnect fixes; the parked delivery is then redriven.
RETRYABLE_CODES = frozenset({"1", "2", "4", "10", "17", "32", "102", "190", "613", *(str(c) for c in range(200, 300))})


class GraphError(TransientFailure):
    """Graph answered with an error (or not at all). The message carries Graph's error code, never a body.
    One that is not `lead_is_gone` is retried (graph_fetch drops the gone ones before it raises)."""

    def __init__(self, status: int | None, code: str) -> None:
        super().__init__(f"Graph API error: status {status}, code {code}")
        self.status = status
        self.code = code

    @property
    def lead_is_gone(self) -> bool:
        """A 4xx about the lead itself (deleted, never existed, not this page's): asking again cannot help,
        so the delivery is dropped. Retried instead: 5xx, no answer, throttling (429 and Graph's rate-limit
        codes) and a token or permission Graph rejects, which a reconnect and a redrive recover."""
        if self.status is None or not 400 <= self.status < 500 or self.status == 429:
            return False
        return self.code not in RETRYABLE_CODES


def base_url() -> str:
    return (os.environ.get("META_GRAPH_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def fetch_lead(leadgen_id: str, access_token: str) -> dict[str, Any]:
    """The lead as Graph returns it: id, created_time, field_data [{name, values}], ad/adset/campaign/form ids
    and names, platform ('fb' | 'ig')."""
    query = urllib.parse.urlencode({"fields": LEAD_FIELDS})
    request = urllib.request.Request(
        f"{base_url()}/{urllib.parse.quote(leadgen_id, safe='')}?{query}",
        headers={"authorization": f"Bearer {access_token}", "accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError as error:
        raise GraphError(error.code, _error_code(error)) from None
    except (urllib.error.URLError, TimeoutError, ValueError) as error:
        raise GraphError(None, type(error).__name__) from None


def send_events(dataset_id: str, events: list[dict[str, Any]], access_token: str) -> tuple[int, dict[str, Any]]:
    """POST `{base}/{dataset_id}/events` with `{"data": events}` (Conversions API). Meta's answer as (status,
    body): 200 `{events_received, messages, fbtrace_id}`, or a 4xx with its `error`. Raises GraphError (retried)
    for no answer, a 5xx, throttling and a token Graph rejects; any other 4xx is the event's own fault and is
    answered, not raised (sending it again cannot help)."""
    request = urllib.request.Request(
        f"{base_url()}/{urllib.parse.quote(dataset_id, safe='')}/events",
        data=json.dumps({"data": events}).encode(),
        method="POST",
        headers={
            "authorization": f"Bearer {access_token}",
            "content-type": "application/json",
            "accept": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return response.status, dict(json.loads(response.read() or b"{}"))
    except urllib.error.HTTPError as error:
        body = _error_body(error)
        code = (
            str((body.get("error") or {}).get("code", "unknown")) if isinstance(body.get("error"), dict) else "unknown"
        )
        if error.code >= 500 or error.code == 429 or code in RETRYABLE_CODES:
            raise GraphError(error.code, code) from None
        return error.code, body
    except (urllib.error.URLError, TimeoutError, ValueError) as error:
        raise GraphError(None, type(error).__name__) from None


def _error_body(error: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        body = json.loads(error.read())
    except (ValueError, TypeError, AttributeError):
        return {}
    return body if isinstance(body, dict) else {}


def _error_code(error: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(error.read())["error"].get("code", "unknown"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return "unknown"
