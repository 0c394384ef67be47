"""API latency through the local stack under concurrent load: `python -m infra.local` on the bench database,
CLIENTS HTTP clients at once (keep-alive connections), each operation measured on its own.

- get: `GET …/leads/{id}` of random leads of the big organization (as one of its owners);
- list: `GET …/leads` first pages, then `nextCursor` pages, of the big organization;
- create: `POST …/leads` into an organization made for this run (/_local/orgs).

The local stack runs each function as one warm Lambda container (one invocation at a time, as Lambda does
per container): with CLIENTS clients the figures include their queueing, which is what a single container
under that concurrency gives. Any 5xx is counted and fails the target.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.measure import summarize
from bench.scenarios import BigOrg

REPO = Path(__file__).resolve().parents[1]
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "8"))
REQUESTS_PER_CLIENT = 40


@contextmanager
def local_stack(database_url: str) -> Iterator[str]:
    from tests.support.local_stack import running_local_stack

    with (
        tempfile.TemporaryDirectory(prefix="bench-stack-") as data_dir,
        running_local_stack(database_url, Path(data_dir)) as base_url,
    ):
        yield base_url


class Client:
    def __init__(self, base_url: str, token: str | None = None) -> None:
        parts = urlsplit(base_url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.token = token

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"content-type": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        self.connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = self.connection.getresponse()
        payload = response.read()
        return response.status, json.loads(payload) if payload else None


def _under_load(make_call: Callable[[Client, int], tuple[int, Any]], base_url: str, token: str) -> dict[str, Any]:
    samples: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS)

    def client_loop(slot: int) -> None:
        client = Client(base_url, token)
        make_call(client, -1)  # warm the connection
        start.wait()
        for i in range(REQUESTS_PER_CLIENT):
            began = time.perf_counter()
            status, _ = make_call(client, slot * REQUESTS_PER_CLIENT + i)
            elapsed = (time.perf_counter() - began) * 1000
            with lock:
                samples.append(elapsed)
                statuses[status] = statuses.get(status, 0) + 1

    began = time.perf_counter()
    threads = [threading.Thread(target=client_loop, args=(slot,)) for slot in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    latency = summarize(samples)
    server_errors = sum(n for status, n in statuses.items() if status >= 500)
    return {
        **latency.as_dict(),
        "requestsPerSecond": round(len(samples) / wall, 1),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "serverErrors": server_errors,
    }


def measure_api_load(database_url: str, org: BigOrg, log: Callable[[str], None] = print) -> dict[str, Any]:
    with local_stack(database_url) as base_url:
        anonymous = Client(base_url)
        # a new load user each run: a reused seed already holds the last run's (one account per email)
        email = f"bench-load+{uuid.uuid4().hex[:12]}@example.com"
        load_user = {"organizationId": str(org.id), "role": "owner", "email": email}
        status, joined = anonymous.request("POST", "/_local/users", load_user)
        assert status == 201, joined
        big_token = joined["data"]["token"]
        status, scratch = anonymous.request("POST", "/_local/orgs", {"name": "Bench load"})
        assert status == 201, scratch
        scratch_org, scratch_token = scratch["data"]["organizationId"], scratch["data"]["users"]["coach"]["token"]
        lead_ids = [str(lead_id) for lead_id in org.lead_ids]
        rng = random.Random(7)
        cursors: dict[int, str | None] = {}

        def get(client: Client, i: int) -> tuple[int, Any]:
            return client.request("GET", f"/organizations/{org.id}/leads/{rng.choice(lead_ids)}")

        def page(client: Client, i: int) -> tuple[int, Any]:
            slot = id(client)
            cursor = cursors.get(slot)
            path = f"/organizations/{org.id}/leads" + (f"?cursor={cursor}" if cursor else "")
            status, body = client.request("GET", path)
            cursors[slot] = body.get("nextCursor") if status == 200 and body else None
            return status, body

        def create(client: Client, i: int) -> tuple[int, Any]:
            body = {"name": f"Load {i}", "email": f"load.{time.time_ns()}.{i}@example.com"}
            return client.request("POST", f"/organizations/{scratch_org}/leads", body)

        results: dict[str, Any] = {"clients": CLIENTS, "requestsPerClient": REQUESTS_PER_CLIENT}
        for name, call, token in (
            ("get", get, big_token),
            ("list", page, big_token),
            ("create", create, scratch_token),
        ):
            results[name] = _under_load(call, base_url, token)
            log(f"  api {name:<8} p50 {results[name]['p50_ms']:7.1f} ms  p99 {results[name]['p99_ms']:7.1f} ms")
    results["zeroServerErrors"] = all(results[n]["serverErrors"] == 0 for n in ("get", "list", "create"))
    return results


def report_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"API through the local stack, {results['clients']} concurrent clients × {results['requestsPerClient']} "
        "requests each (one warm container per function), milliseconds",
        f"{'operation':<12} {'p50':>8} {'p95':>8} {'p99':>8} {'req/s':>8} {'5xx':>5}",
    ]
    for name in ("get", "list", "create"):
        row = results[name]
        lines.append(
            f"{name:<12} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['p99_ms']:8.1f} "
            f"{row['requestsPerSecond']:8.1f} {row['serverErrors']:5d}"
        )
    lines.append(f"zero 5xx: {'yes' if results['zeroServerErrors'] else 'NO'}")
    return lines
