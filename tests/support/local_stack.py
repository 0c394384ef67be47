"""The local stack (`python -m infra.local`) started once per test session, on the tests' PostgreSQL, and a
small HTTP client for it. The fixtures are registered by tests/conftest.py, so the e2e and the reliability
suites share one running stack."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.database import create_database, drop_database, throwaway_database_name

REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 90


def fresh_loopback_ip() -> str:
    """An address of 127.0.0.0/8 other than 127.0.0.1: every one of them reaches the stack on this machine."""
    a, b, c = os.urandom(3)
    return f"127.{a}.{b}.{max(c, 2)}"


@dataclass
class HttpReply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class LocalStackClient:
    def __init__(self, base_url: str, data_dir: Path | None = None, output: deque[str] | None = None) -> None:
        self.base_url = base_url
        self.data_dir = data_dir  # the stack's --data-dir (its signing key lives there)
        self.output = output if output is not None else deque()  # its latest lines of output, as it prints them

    def log_lines(self) -> list[dict[str, Any]]:
        """The JSON lines (the functions' logs) among its latest output."""
        lines = []
        for text in self.output.copy():  # copied whole: the reader thread appends meanwhile
            if text.startswith("{"):
                try:
                    lines.append(json.loads(text))
                except ValueError:
                    continue
        return lines

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        raw: bytes | None = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        source_ip: str | None = None,
    ) -> HttpReply:
        """One request; `source_ip` (a loopback address) sends it from a client of its own, as the gateway sees
        the connection's peer: public captures are throttled per client address."""
        data = raw if raw is not None else (json.dumps(json_body).encode() if json_body is not None else None)
        if source_ip is not None:
            return self._request_from(source_ip, method, path, data, token, json_body is not None, headers or {})
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if json_body is not None:
            request.add_header("content-type", "application/json")
        if token:
            request.add_header("authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return HttpReply(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as error:
            return HttpReply(error.code, dict(error.headers), error.read())

    def _request_from(
        self,
        source_ip: str,
        method: str,
        path: str,
        data: bytes | None,
        token: str | None,
        is_json: bool,
        headers: dict[str, str],
    ) -> HttpReply:
        url = urllib.parse.urlsplit(self.base_url)
        all_headers = {**({"content-type": "application/json"} if is_json else {}), **headers}
        if token:
            all_headers["authorization"] = f"Bearer {token}"
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30, source_address=(source_ip, 0))
        try:
            connection.request(method, path, body=data, headers=all_headers)
            response = connection.getresponse()
            return HttpReply(response.status, dict(response.headers), response.read())
        finally:
            connection.close()

    def capture(self, organization_id: str, body: dict[str, Any]) -> HttpReply:
        """A public capture from a visitor of its own (a fresh loopback address): tests that capture share the
        stack, and one client's per-minute capture limit must not be another test's refusal."""
        return self.request(
            "POST", f"/leads/organization/{organization_id}", json_body=body, source_ip=fresh_loopback_ip()
        )

    def wait_until_idle(self, timeout: float = 20) -> None:
        """Until no queue holds a message, no function runs and no event waits for the relay. Events left to
        the relay (more than a request publishes, a job's) are relayed at once rather than on the relay's
        schedule (every minute), as `/_local/tick` does for any job: what the stack set off is what a test
        waits for, not the schedule."""
        deadline = time.monotonic() + timeout
        state: dict[str, Any] = {}
        relayed_at = 0.0
        while time.monotonic() < deadline:
            state = self.request("GET", "/_local/idle").json()["data"]
            if state["idle"]:
                return
            only_the_relay_left = not state["busy"] and not any(state["queues"].values())
            if only_the_relay_left and time.monotonic() - relayed_at > 1:
                relayed_at = time.monotonic()
                self.request("POST", "/_local/tick", json_body={"job": "outbox_relay"})
            time.sleep(0.2)
        raise AssertionError(f"the local stack did not become idle: {state}")

    def sent_emails(self) -> list[dict[str, Any]]:
        """Every mail SES sent, oldest first, through `/_local/sent-emails`'s pages."""
        mails: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.request("GET", "/_local/sent-emails?limit=500" + (f"&cursor={cursor}" if cursor else "")).json()
            mails.extend(page["data"])
            cursor = page["nextCursor"]
            if cursor is None:
                return mails

    def token_for(self, subject: str, email: str | None = None) -> str:
        """A token for any subject (a user made by directory events signs in with it): `POST /_local/tokens`."""
        body = {"sub": subject, **({"email": email} if email else {})}
        reply = self.request("POST", "/_local/tokens", json_body=body)
        assert reply.status == 201, reply.body
        return reply.json()["data"]["token"]

    def advance_clock(self, duration: str) -> dict[str, Any]:
        """`POST /_local/clock {"advance": duration}`: the stack's time moves on (use the `local_clock` fixture,
        which puts it back)."""
        reply = self.request("POST", "/_local/clock", json_body={"advance": duration})
        assert reply.status == 200, reply.body
        return reply.json()["data"]

    def set_clock(self, instant: str) -> dict[str, Any]:
        reply = self.request("POST", "/_local/clock", json_body={"set": instant})
        assert reply.status == 200, reply.body
        return reply.json()["data"]

    def reset_clock(self) -> dict[str, Any]:
        reply = self.request("DELETE", "/_local/clock")
        assert reply.status == 200, reply.body
        return reply.json()["data"]

    def new_organization(self) -> dict[str, Any]:
        reply = self.request("POST", "/_local/orgs", json_body={"name": "E2E Studio"})
        assert reply.status == 201, reply.body
        return reply.json()["data"]


@pytest.fixture(scope="session")
def local_stack_database(postgres_server_url: str, fake_aws_environment: object) -> Iterator[str]:
    """A database of its own, empty (the stack migrates it as it starts): `/_local/idle` watches the whole
    outbox, which other suites leave rows in."""
    name = throwaway_database_name()
    url = create_database(postgres_server_url, name)
    yield url
    drop_database(postgres_server_url, name)


class LocalStackDidNotStart(RuntimeError):
    pass


@contextmanager
def running_local_stack(database_url: str, data_dir: Path, output: deque[str] | None = None) -> Iterator[str]:
    """`python -m infra.local` on `database_url` (port chosen by the stack); yields its base URL, stops it after.
    Its latest lines of output go to `output` (by default kept only for a failing test's report)."""
    # INFO: the functions' every log line, as in AWS (tests read them); `make dev` prints warnings and errors.
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1", "POWERTOOLS_LOG_LEVEL": "INFO"}
    env.pop("AWS_ENDPOINT_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.local", "--port", "0", "--quiet", "--data-dir", str(data_dir)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base_url, seen = None, []
    deadline = time.monotonic() + STARTUP_SECONDS
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        found = re.search(r"local stack on (http://127\.0\.0\.1:\d+)", line)
        base_url = base_url or (found.group(1) if found else None)
        if line.strip() == "READY":
            break
    if base_url is None or process.poll() is not None:
        process.kill()
        raise LocalStackDidNotStart("the local stack did not start:\n" + "".join(seen))
    # Keep reading its output (the last lines are kept for a failing test's report): a pipe nobody reads
    # fills up, and the stack then blocks on its next log line, mid-request.
    tail: deque[str] = output if output is not None else deque(maxlen=200)
    tail.extend(seen[-200:])
    threading.Thread(target=lambda: tail.extend(process.stdout), name="local-stack-output", daemon=True).start()
    try:
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def local_clock(local_stack: LocalStackClient) -> Iterator[LocalStackClient]:
    """The shared stack, for a test that moves its clock: afterwards the clock is real time again, whatever
    the test did, so the next test of the worker (any module) starts from now. What the moved time set off
    is let finish first (`/_local/idle`): an event stamped in the future and left to the relay would wait
    for the real time to pass it."""
    local_stack.reset_clock()
    try:
        yield local_stack
    finally:
        try:
            local_stack.wait_until_idle()
        finally:
            local_stack.reset_clock()


@pytest.fixture(scope="session")
def local_stack(local_stack_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackClient]:
    data_dir = tmp_path_factory.mktemp("local-stack")
    try:
        output: deque[str] = deque(maxlen=5000)
        with running_local_stack(local_stack_database, data_dir, output) as base_url:
            yield LocalStackClient(base_url, data_dir, output)
    except LocalStackDidNotStart as error:
        pytest.fail(str(error))
