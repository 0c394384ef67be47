"""The local gateway under load, as API Gateway behaves: every connection answered, concurrent requests served
by warm containers of their own that all see the stack's state (its clock), every body read whole."""

from __future__ import annotations

import http.client
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

CLIENTS = 50
ROUNDS = 3
SLACK = timedelta(seconds=30)


def _address(stack: LocalStackClient) -> tuple[str, int]:
    parts = urlsplit(stack.base_url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def _on_a_new_connection(stack: LocalStackClient, method: str, path: str, body: str | None, token: str | None) -> str:
    """What one request met, on a connection of its own: its status, or the error that dropped it."""
    host, port = _address(stack)
    connection = http.client.HTTPConnection(host, port, timeout=60)
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {token}"} if token else {})}
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        return "5xx" if response.status >= 500 else str(response.status)
    except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as dropped:
        return type(dropped).__name__
    finally:
        connection.close()


def test_fifty_clients_at_once_get_every_connection_answered_without_a_5xx(local_clock: LocalStackClient) -> None:
    local_stack = local_clock
    # Every local client is 127.0.0.1, and public captures are rate-limited per address and minute: a day
    # ahead, the burst's captures fill a window of their own, not the one the next tests capture in.
    local_stack.advance_clock("P1D")
    org = local_stack.new_organization()
    org_id, coach = org["organizationId"], org["users"]["coach"]["token"]

    def create(i: int) -> str:
        body = f'{{"name": "Burst {i}", "email": "burst.{i}.{uuid.uuid4().hex[:8]}@example.com"}}'
        return _on_a_new_connection(local_stack, "POST", f"/organizations/{org_id}/leads", body, coach)

    def capture(i: int) -> str:
        body = f'{{"name": "Form {i}", "email": "form.{i}.{uuid.uuid4().hex[:8]}@example.com"}}'
        return _on_a_new_connection(local_stack, "POST", f"/leads/organization/{org_id}", body, None)

    def read(i: int) -> str:
        return _on_a_new_connection(local_stack, "GET", f"/organizations/{org_id}/leads", None, coach)

    calls: list[Callable[[int], str]] = [create, capture, read]
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)

    def client(slot: int) -> None:
        start.wait()
        for round_ in range(ROUNDS):
            outcome = calls[(slot + round_) % len(calls)](slot * ROUNDS + round_)
            with lock:
                outcomes[outcome] += 1

    threads = [threading.Thread(target=client, args=(slot,)) for slot in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(outcomes.values()) == CLIENTS * ROUNDS
    assert set(outcomes) <= {"200", "201", "429"}, outcomes  # 429: the public form's own rate limit
    assert outcomes["201"] > 0 and outcomes["200"] > 0, outcomes


def test_every_warm_container_stamps_with_the_moved_clock(local_clock: LocalStackClient) -> None:
    org = local_clock.new_organization()
    org_id, owner = org["organizationId"], org["users"]["owner"]["token"]
    moved = datetime.fromisoformat(local_clock.advance_clock("P10D")["now"])

    def create(i: int) -> datetime:
        reply = local_clock.request(
            "POST", f"/organizations/{org_id}/leads", token=owner, json_body={"name": f"Later {i}"}
        )
        assert reply.status == 201, reply.body
        return datetime.fromisoformat(reply.json()["data"]["createdAt"])

    with ThreadPoolExecutor(8) as pool:  # concurrent: several containers take them
        stamps = list(pool.map(create, range(16)))

    assert all(abs(stamp - moved) < SLACK for stamp in stamps), stamps


def test_a_chunked_body_is_read_whole_and_the_connection_serves_the_next_request(
    local_stack: LocalStackClient,
) -> None:
    org = local_stack.new_organization()
    org_id, coach = org["organizationId"], org["users"]["coach"]["token"]
    host, port = _address(local_stack)
    connection = http.client.HTTPConnection(host, port, timeout=30)
    headers = {"content-type": "application/json", "authorization": f"Bearer {coach}"}
    parts = [b'{"name": "Chunked ', b'Cohen", "email": "chunked@', b'example.com"}']

    connection.request("POST", f"/organizations/{org_id}/leads", body=iter(parts), headers=headers, encode_chunked=True)
    created = connection.getresponse()
    created_body = created.read()
    connection.request("GET", f"/organizations/{org_id}/leads", headers=headers)
    listed = connection.getresponse()
    listed.read()
    connection.close()

    assert created.status == 201, created_body
    assert b'"Chunked Cohen"' in created_body
    assert listed.status == 200


def test_a_request_whose_length_cannot_be_read_is_answered_400_not_dropped(local_stack: LocalStackClient) -> None:
    with socket.create_connection(_address(local_stack), timeout=30) as raw:
        raw.sendall(b"POST /leads/organization/x HTTP/1.1\r\nHost: local\r\nContent-Length: ten\r\n\r\n{}")
        deadline, answer = time.monotonic() + 10, b""
        while time.monotonic() < deadline:
            chunk = raw.recv(65536)
            if not chunk:
                break
            answer += chunk

    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert answer.endswith(b'{"message":"Bad Request"}')
