"""HTTP on 127.0.0.1: requests become the events API Gateway and function URLs deliver to Lambda."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from infra.local.aws import ACCOUNT

TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded", "application/xml")
# Routes API Gateway serves without the JWT authorizer (see infra's api construct).
PUBLIC_API_PREFIXES = ("/openapi.json", "/leads/organization/", "/public/ticket-surveys/", "/unsubscribe/")


def http_api_event(
    method: str,
    raw_path: str,
    raw_query: str,
    headers: dict[str, str],
    body: bytes,
    claims: dict[str, str] | None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """An API Gateway HTTP API payload v2.0 event (also the function URL shape, which has no authorizer)."""
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        lowered[key] = f"{lowered[key]},{value}" if key in lowered else value
    query: dict[str, str] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    content_type = lowered.get("content-type", "")
    is_text = not body or content_type.startswith(TEXT_TYPES)
    if is_text and body:
        try:
            body.decode()
        except UnicodeDecodeError:  # bytes that are not text travel base64-encoded, whatever they claim
            is_text = False
    now = datetime.now(UTC)
    context: dict[str, Any] = {
        "accountId": ACCOUNT,
        "apiId": "local",
        "domainName": lowered.get("host", "127.0.0.1"),
        "domainPrefix": "local",
        "requestId": str(uuid.uuid4()),
        "routeKey": "$default",
        "stage": "$default",
        "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "timeEpoch": int(now.timestamp() * 1000),
        "http": {
            "method": method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": lowered.get("user-agent", ""),
        },
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": lowered,
        "requestContext": context,
        "isBase64Encoded": not is_text,
    }
    if "cookie" in lowered:
        event["cookies"] = [c.strip() for c in lowered["cookie"].split(";")]
    if query:
        event["queryStringParameters"] = query
    if body:
        event["body"] = body.decode() if is_text else base64.b64encode(body).decode()
    return event


MAX_CHUNK_LINE = 1024  # a chunk-size line (hex size, extensions) or a trailer line
Route = Callable[[str, str, str, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]


class _Server(ThreadingHTTPServer):
    # The listen backlog (the kernel caps it at net.core.somaxconn). Python's default of 5 reset about one POST
    # in five when 40 clients connected at once: with the SYN queue that small, Linux answers with SYN cookies
    # and drops the handshake's last ACK while the accept queue is full; the client, already connected, sends
    # its headers and then its body (http.client sends them apart), and when the body's segment is the first
    # to get through, its sequence number fails the cookie check and the kernel resets the connection. A GET
    # is one segment, which passes, so GETs were spared. 1024 keeps the queues clear of that for hundreds of
    # simultaneous connections.
    request_queue_size = 1024


def make_server(port: int, dispatch: Route) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body leave in one send: a buffered writer (flushed once the request is answered) and no
        # Nagle. Unbuffered, the headers went alone and the body waited for the client's delayed ACK (~40 ms).
        wbufsize = -1
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            started = time.monotonic()
            parts = urlsplit(self.path)
            body = self._read_body()
            if body is None:  # unframed: answered as API Gateway does, and the connection closed after it
                self.close_connection = True
                status, headers, payload = 400, {"content-type": "application/json"}, b'{"message":"Bad Request"}'
            else:
                try:
                    status, headers, payload = dispatch(self.command, parts.path, parts.query, dict(self.headers), body)
                except Exception as error:  # the stack itself broke: say so plainly
                    status, headers = 502, {"content-type": "application/json"}
                    payload = json.dumps({"message": f"local stack error: {error!r}"}).encode()
            self.send_response(status)
            for name, value in headers.items():
                if name.lower() not in ("content-length", "connection"):
                    self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":  # a HEAD answer has the headers of a GET and no body
                self.wfile.write(payload)
            self.log_message('"%s %s" %s %.1fms', self.command, parts.path, status, (time.monotonic() - started) * 1000)

        def _read_body(self) -> bytes | None:
            """The whole request body, read before anything is answered (a connection closed with bytes
            unread is reset, and the client loses the answer); None when its framing cannot be read."""
            if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                return self._read_chunks()
            length = (self.headers.get("content-length") or "0").strip()
            if not length.isdigit():
                return None
            return self.rfile.read(int(length)) if int(length) else b""

        def _read_chunks(self) -> bytes | None:
            chunks = []
            while True:
                size_line = self.rfile.readline(MAX_CHUNK_LINE).split(b";", 1)[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(MAX_CHUNK_LINE) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(MAX_CHUNK_LINE)  # the CRLF after the chunk

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _serve

        def __getattr__(self, name: str) -> Any:
            # API Gateway takes any method (HEAD, TRACE, QUERY, …); one without a route is the function's 404
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass  # _serve logs one line per request, with its duration

        def log_message(self, format: str, *args: Any) -> None:
            if self.server.quiet:  # type: ignore[attr-defined]
                return
            super().log_message(format, *args)

    server = _Server(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.quiet = False  # type: ignore[attr-defined]
    return server


def lambda_result(result: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """A Lambda proxy result as an HTTP response."""
    headers = {k: str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = ",".join(str(v) for v in values)
    body = result.get("body") or ""
    payload = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
    return int(result.get("statusCode", 200)), headers, payload
