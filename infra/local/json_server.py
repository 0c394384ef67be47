"""A JSON HTTP server on 127.0.0.1 for the tests' stand-ins of outside APIs (the Graph API, the WhatsApp Cloud
API) when they run without the local stack: the stand-in answers (method, path parts, Authorization, body)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

# method, the path's non-empty parts, the Authorization header, the JSON body (None: none, or not JSON)
Answer = Callable[[str, list[str], str | None, Any], tuple[int, Any]]


@contextmanager
def serve_json(answer: Answer, base_path: str = "/v21.0") -> Iterator[str]:
    """Serves `answer` until the block ends; yields its base URL (where META_GRAPH_BASE_URL points)."""

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            parts = [part for part in urlsplit(self.path).path.split("/") if part]
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            status, reply = answer(self.command, parts, self.headers.get("authorization"), body)
            payload = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _handle  # noqa: N815 (http.server's names)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{base_path}"
    finally:
        server.shutdown()
        server.server_close()
