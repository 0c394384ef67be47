"""Calls the real API handler with a real HTTP API event and reads the answer back."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from tests.support.events import http_api_event, lambda_context


@dataclass(frozen=True)
class ApiResponse:
    status: int
    headers: dict[str, str]
    body: Any  # the parsed JSON, or the text when it is not JSON
    raw: dict[str, Any]

    @property
    def data(self) -> Any:
        return self.body["data"]

    @property
    def error_code(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            return self.body["error"].get("code")
        return None


def invoke(event: dict[str, Any]) -> ApiResponse:
    from api.handler import lambda_handler

    raw = lambda_handler(event, lambda_context("leadcrm-api"))
    text = raw.get("body") or ""
    if raw.get("isBase64Encoded"):
        text = base64.b64decode(text).decode()
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = text
    headers = {k.lower(): v for k, v in (raw.get("headers") or {}).items()}
    return ApiResponse(status=raw["statusCode"], headers=headers, body=body, raw=raw)


def call_api(method: str, path: str, *, sub: str | None, **kwargs: Any) -> ApiResponse:
    """`call_api("POST", f"/organizations/{org}/leads", sub=caller.sub, body={...})`."""
    return invoke(http_api_event(method, path, sub=sub, **kwargs))


def leads_path(org_id: Any, lead_id: Any | None = None) -> str:
    base = f"/organizations/{org_id}/leads"
    return base if lead_id is None else f"{base}/{lead_id}"
