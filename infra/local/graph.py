"""Meta Graph on this machine: the lead endpoint graph_fetch reads a leadgen id from, and the Conversions API
endpoint meta_events sends CRM events to.

`POST /_local/graph/leads` registers a test lead (the body is the lead as Graph returns it: `id`,
`field_data`, `ad_id`, `form_id`, `campaign_name`, `platform`, ...); `GET /_local/graph/<leadgen id>` answers
it as Graph would, to a request with a bearer token. `POST /_local/graph/<dataset id>/events` `{"data": [...]}`
records each event and answers as Meta does (`events_received`, `fbtrace_id`); `GET /_local/meta/events` lists
what was recorded, oldest first. The local stack points META_GRAPH_BASE_URL here; the tests serve the same
registry from a server of their own.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any

from infra.local import faults
from infra.local.json_server import serve_json

# Graph's own error shapes: code 190 for a bad token, 100 for an id that is not an object it can read.
NO_TOKEN = {"error": {"message": "An access token is required.", "type": "OAuthException", "code": 190}}
NO_SUCH_LEAD = {
    "error": {"message": "Unsupported get request. Object does not exist.", "type": "GraphMethodException", "code": 100}
}

INVALID_EVENTS = {
    "error": {"message": "(#100) Invalid parameter", "type": "OAuthException", "code": 100, "fbtrace_id": "local"}
}


class LocalGraph:
    def __init__(self, registry: faults.FaultRegistry | None = None) -> None:
        self.faults = registry or faults.FaultRegistry()  # the stack passes its own (`/_local/faults`)
        self._leads: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._errors: dict[str, tuple[int, dict[str, Any]]] = {}
        self.requests: list[tuple[str, str | None]] = []  # (leadgen id, token) of every read, oldest first
        self.events: list[dict[str, Any]] = []  # every CRM event received, oldest first

    def fail(self, leadgen_id: str, status: int, code: int = 2) -> None:
        """Answer this leadgen id with a Graph error (e.g. 500 code 2, "service temporarily unavailable")."""
        with self._lock:
            self._errors[leadgen_id] = (status, {"error": {"message": "Graph error", "type": "Test", "code": code}})

    def register(self, lead: dict[str, Any]) -> str | None:
        """Keep a lead to answer later; None when it has no string `id`."""
        lead_id = lead.get("id")
        if not isinstance(lead_id, str) or not lead_id:
            return None
        with self._lock:
            self._leads[lead_id] = dict(lead)
        return lead_id

    def read(self, leadgen_id: str, authorization: str | None) -> tuple[int, dict[str, Any]]:
        """(status, body) as Graph answers `GET /<leadgen id>`."""
        token = authorization[7:] if authorization and authorization.lower().startswith("bearer ") else None
        with self._lock:
            self.requests.append((leadgen_id, token))
            lead = self._leads.get(leadgen_id)
            error = self._errors.get(leadgen_id)
        if error is not None:
            return error
        fault = self.faults.take("graph")  # an armed fault answers every lead alike, as an outage does
        if fault is not None:
            return faults.graph_error(fault)
        if not token:
            return 401, NO_TOKEN
        if lead is None:
            return 400, NO_SUCH_LEAD
        return 200, lead

    def receive_events(self, dataset_id: str, authorization: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        """(status, body) as the Conversions API answers `POST /<dataset id>/events` `{"data": [...]}`."""
        token = authorization[7:] if authorization and authorization.lower().startswith("bearer ") else None
        fault = self.faults.take("graph")
        if fault is not None:
            return faults.graph_error(fault)
        if not token:
            return 401, NO_TOKEN
        data = body.get("data") if isinstance(body, dict) else None
        if not dataset_id.isdigit() or not isinstance(data, list) or not data:
            return 400, INVALID_EVENTS
        with self._lock:
            for event in data:
                self.events.append({"datasetId": dataset_id, "event": event})
        return 200, {"events_received": len(data), "messages": [], "fbtrace_id": f"local-{len(self.events)}"}

    def recorded_events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(e) for e in self.events]


def serve(graph: LocalGraph) -> AbstractContextManager[str]:
    """Serves `graph` on 127.0.0.1 as the Graph API (outside the local stack); yields a META_GRAPH_BASE_URL."""

    def answer(method: str, parts: list[str], authorization: str | None, body: Any) -> tuple[int, Any]:
        if method == "GET":
            return graph.read(parts[-1] if parts else "", authorization)
        if len(parts) >= 2 and parts[-1] == "events":
            return graph.receive_events(parts[-2], authorization, body)
        return 400, INVALID_EVENTS

    return serve_json(answer)
