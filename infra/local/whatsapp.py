"""The WhatsApp Cloud API on this machine, under the local Graph stand-in (META_GRAPH_BASE_URL is the local
stack's `/_local/graph`): what graph_fetch sends messages to and reads templates from.

- `POST /_local/graph/<phone number id>/messages` (a bearer token, the Cloud API body) records the message and
  answers as the Cloud API does: `{"messaging_product": "whatsapp", "contacts": [...], "messages": [{"id":
  "wamid…"}]}`. `GET /_local/whatsapp/sent` lists what was sent, oldest first.
- `GET /_local/graph/<WhatsApp Business account id>/message_templates` answers the templates registered with
  `POST /_local/whatsapp/templates` `{businessAccountId, templates: [...]}` (the Cloud API's template shape:
  name, language, status, category, components), in Graph's page shape.

Inbound and status webhooks are not played from here: tests sign them with the app secret and post them to
`/webhooks/whatsapp`, exactly as Meta does.
"""

from __future__ import annotations

import base64
import threading
import uuid
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from infra.local import faults
from infra.local.json_server import serve_json

NO_TOKEN = {"error": {"message": "An access token is required.", "type": "OAuthException", "code": 190}}
BAD_REQUEST = {
    "error": {"message": "(#100) Invalid parameter", "type": "OAuthException", "code": 100, "error_subcode": 2494010}
}


class LocalWhatsApp:
    def __init__(self, registry: faults.FaultRegistry | None = None) -> None:
        self.faults = registry or faults.FaultRegistry()  # a `graph` fault fails these calls too
        self._lock = threading.Lock()
        self._sent: list[dict[str, Any]] = []
        self._templates: dict[str, list[dict[str, Any]]] = {}

    def send(self, phone_number_id: str, authorization: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        fault = self.faults.take("graph")
        if fault is not None:
            return faults.graph_error(fault)
        if not (authorization and authorization.lower().startswith("bearer ") and authorization[7:].strip()):
            return 401, NO_TOKEN
        if not isinstance(body, dict) or body.get("messaging_product") != "whatsapp" or not body.get("to"):
            return 400, BAD_REQUEST
        wamid = "wamid." + base64.b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        record = {
            "wamid": wamid,
            "phoneNumberId": phone_number_id,
            "to": body.get("to"),
            "type": body.get("type"),
            "text": (body.get("text") or {}).get("body") if isinstance(body.get("text"), dict) else None,
            "template": body.get("template"),
            "bizOpaqueCallbackData": body.get("biz_opaque_callback_data"),
            "at": datetime.now(UTC).isoformat(),
        }
        with self._lock:
            self._sent.append(record)
        to = str(body["to"])
        return 200, {
            "messaging_product": "whatsapp",
            "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": wamid}],
        }

    def sent(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._sent)

    def register_templates(self, business_account_id: str, templates: list[dict[str, Any]]) -> None:
        with self._lock:
            self._templates[business_account_id] = [dict(t) for t in templates]

    def templates(self, business_account_id: str, authorization: str | None) -> tuple[int, dict[str, Any]]:
        fault = self.faults.take("graph")
        if fault is not None:
            return faults.graph_error(fault)
        if not authorization:
            return 401, NO_TOKEN
        with self._lock:
            data = list(self._templates.get(business_account_id, []))
        return 200, {"data": data, "paging": {"cursors": {"before": "", "after": ""}}}


def serve(whatsapp: LocalWhatsApp) -> AbstractContextManager[str]:
    """Serves `whatsapp` on 127.0.0.1 as the Cloud API (outside the local stack); yields a META_GRAPH_BASE_URL."""

    def answer(method: str, parts: list[str], authorization: str | None, body: Any) -> tuple[int, Any]:
        number_or_account = parts[-2] if len(parts) >= 2 else ""
        if method == "POST":
            return whatsapp.send(number_or_account, authorization, body)
        return whatsapp.templates(number_or_account, authorization)

    return serve_json(answer)
