"""The Meta Graph API, for the one call ingestion makes: read a Lead Ads lead by its leadgen id.

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

DEFAULT_BASE_URL = "https://graph.facebook.com/v21.0"
LEAD_FIELDS = (
    "id,created_time,field_data,ad_id,ad_name,adset_id,adset_name,campaign_id,campaign_name,form_id,platform,is_organic"
)
TIMEOUT_SECONDS = 5


class GraphError(Exception):
    """Graph answered with an error (or not at all). The message carries Graph's error code, never a body."""

    def __init__(self, status: int | None, code: str) -> None:
        super().__init__(f"Graph API error: status {status}, code {code}")
        self.status = status
        self.code = code


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


def _error_code(error: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(error.read())["error"].get("code", "unknown"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return "unknown"
