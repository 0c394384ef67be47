"""The API through the local stack (`python -m infra.local` on the bench database), as a client meets it.

- one client: `GET …/leads/{id}` of random leads of the big organization, one request at a time on a
  keep-alive connection (p50, p99), beside two baselines from the same run: the same GETs through
  `lambda_handler` in this process (what the function costs), and `GET /_local/clock` through the stack
  (what the gateway costs without a function);
- 8 clients: the same GET from CLIENTS clients at once (p50, and its ratio to the one-client p50: Lambda
  serves concurrent requests from several warm containers, so the ratio stays near 1 until the CPUs are busy),
  and the list and create routes under the same load;
- 50 clients: BURST_CLIENTS clients at once, each request on a new connection (as browsers and the tests'
  urllib open them), doing staff creates, public captures and GETs: connection resets and 5xx, both 0.

Targets (issue 22): one client p50 ≤ 10 ms and p99 ≤ 25 ms; 8 clients p50 ≤ 2× the one-client p50;
50 clients: no reset, no 5xx. Any 5xx anywhere fails `make bench`.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.measure import summarize
from bench.scenarios import OWNER_SUBJECT, BigOrg

REPO = Path(__file__).resolve().parents[1]
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "8"))
REQUESTS_PER_CLIENT = 40
ONE_CLIENT_REQUESTS = 200
WARMUP = 20
BURST_CLIENTS = 50
BURST_ROUNDS = 4
ONE_CLIENT_P50_TARGET_MS = 10.0
ONE_CLIENT_P99_TARGET_MS = 25.0
CONCURRENT_RATIO_TARGET = 2.0
# What a client sees when the server drops its connection rather than answering.
DROPPED = (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)


@contextmanager
def local_stack(database_url: str) -> Iterator[str]:
    from tests.support.local_stack import running_local_stack

    with (
        tempfile.TemporaryDirectory(prefix="bench-stack-") as data_dir,
        running_local_stack(database_url, Path(data_dir)) as base_url,
    ):
        yield base_url


class Client:
    """One keep-alive connection (or, with `fresh`, a new connection per request)."""

    def __init__(self, base_url: str, token: str | None = None, *, fresh: bool = False) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.token = token
        self.fresh = fresh

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"content-type": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        if self.fresh:
            headers["connection"] = "close"
        self.connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = self.connection.getresponse()
        payload = response.read()
        if self.fresh:
            self.connection.close()
        return response.status, json.loads(payload) if payload else None


def _one_client(call: Callable[[int], object]) -> dict[str, Any]:
    for i in range(WARMUP):
        call(i)
    samples = []
    for i in range(ONE_CLIENT_REQUESTS):
        began = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - began) * 1000)
    return summarize(samples).as_dict()


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


def _burst(calls: list[Callable[[Client, int], tuple[int, Any]]], base_url: str, tokens: list[str | None]) -> dict:
    """BURST_CLIENTS clients released at once, each request on a new connection; what each request met."""
    outcomes: dict[str, int] = {}
    lock = threading.Lock()
    start = threading.Barrier(BURST_CLIENTS)

    def client_loop(slot: int) -> None:
        start.wait()
        for round_ in range(BURST_ROUNDS):
            kind = (slot + round_) % len(calls)
            try:
                status, _ = calls[kind](Client(base_url, tokens[kind], fresh=True), slot * BURST_ROUNDS + round_)
                outcome = "5xx" if status >= 500 else str(status)
            except DROPPED:
                outcome = "reset"
            except OSError as error:
                outcome = type(error).__name__
            with lock:
                outcomes[outcome] = outcomes.get(outcome, 0) + 1

    began = time.perf_counter()
    threads = [threading.Thread(target=client_loop, args=(slot,)) for slot in range(BURST_CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "clients": BURST_CLIENTS,
        "requests": BURST_CLIENTS * BURST_ROUNDS,
        "seconds": round(time.perf_counter() - began, 2),
        "outcomes": dict(sorted(outcomes.items())),
        "resets": outcomes.get("reset", 0),
        "serverErrors": outcomes.get("5xx", 0),
    }


def _handler_baseline(org: BigOrg, lead_ids: list[str]) -> dict[str, Any]:
    """The same GETs through lambda_handler in this process: the function alone, without HTTP or a gateway."""
    from api.handler import lambda_handler
    from tests.support.events import http_api_event, lambda_context

    context = lambda_context("leadcrm-api")
    rng = random.Random(11)

    def call(i: int) -> None:
        path = f"/organizations/{org.id}/leads/{rng.choice(lead_ids)}"
        response = lambda_handler(http_api_event("GET", path, sub=OWNER_SUBJECT), context)
        if response["statusCode"] != 200:
            raise RuntimeError(f"GET lead through the handler answered {response['statusCode']}: {response['body']}")

    quiet = logging.getLogger("leadcrm")  # Powertools' logger: no INFO line per request in the bench's output
    level = quiet.level
    quiet.setLevel(logging.WARNING)
    try:
        return _one_client(call)
    finally:
        quiet.setLevel(level)


def measure_api_load(database_url: str, org: BigOrg, log: Callable[[str], None] = print) -> dict[str, Any]:
    lead_ids = [str(lead_id) for lead_id in org.lead_ids]
    results: dict[str, Any] = {"baselines": {"handlerInProcess": _handler_baseline(org, lead_ids)}}
    with local_stack(database_url) as base_url:
        anonymous = Client(base_url)
        status, minted = anonymous.request("POST", "/_local/tokens", {"sub": OWNER_SUBJECT})
        assert status == 201, minted
        owner_token = minted["data"]["token"]
        status, scratch = anonymous.request("POST", "/_local/orgs", {"name": "Bench load"})
        assert status == 201, scratch
        scratch_org, scratch_token = scratch["data"]["organizationId"], scratch["data"]["users"]["coach"]["token"]
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

        def capture(client: Client, i: int) -> tuple[int, Any]:
            body = {"name": f"Form {i}", "email": f"form.{time.time_ns()}.{i}@example.com"}
            return client.request("POST", f"/leads/organization/{scratch_org}", body)

        one = Client(base_url, owner_token)
        results["baselines"]["gatewayOnly"] = _one_client(lambda i: anonymous.request("GET", "/_local/clock"))
        results["oneClient"] = _one_client(lambda i: get(one, i))
        alone = results["oneClient"]
        log(f"  api get, 1 client   p50 {alone['p50_ms']:7.1f} ms  p99 {alone['p99_ms']:7.1f}")
        for name, call, token in (
            ("get", get, owner_token),
            ("list", page, owner_token),
            ("create", create, scratch_token),
        ):
            results[name] = _under_load(call, base_url, token)
            row = results[name]
            log(f"  api {name:<6} {CLIENTS} clients p50 {row['p50_ms']:7.1f} ms  p99 {row['p99_ms']:7.1f}")
        results["burst"] = _burst([create, capture, get], base_url, [scratch_token, None, owner_token])
        log(f"  api burst of {BURST_CLIENTS} clients: {results['burst']['outcomes']}")
    one_client, eight = results["oneClient"], results["get"]
    results["clients"], results["requestsPerClient"] = CLIENTS, REQUESTS_PER_CLIENT
    results["concurrentP50Ratio"] = round(eight["p50_ms"] / one_client["p50_ms"], 2)
    results["targets"] = {
        "oneClientP50Ms": ONE_CLIENT_P50_TARGET_MS,
        "oneClientP99Ms": ONE_CLIENT_P99_TARGET_MS,
        "concurrentP50Ratio": CONCURRENT_RATIO_TARGET,
        "burstResets": 0,
        "burstServerErrors": 0,
    }
    results["meetsTargets"] = {
        "oneClientP50": one_client["p50_ms"] <= ONE_CLIENT_P50_TARGET_MS,
        "oneClientP99": one_client["p99_ms"] <= ONE_CLIENT_P99_TARGET_MS,
        "concurrentP50Ratio": results["concurrentP50Ratio"] <= CONCURRENT_RATIO_TARGET,
        "burstResets": results["burst"]["resets"] == 0,
        "burstServerErrors": results["burst"]["serverErrors"] == 0,
    }
    results["zeroServerErrors"] = (
        all(results[n]["serverErrors"] == 0 for n in ("get", "list", "create"))
        and results["burst"]["serverErrors"] == 0
    )
    return results


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def report_lines(results: dict[str, Any]) -> list[str]:
    one, base = results["oneClient"], results["baselines"]
    meets, targets = results["meetsTargets"], results["targets"]
    burst = results["burst"]
    lines = [
        "",
        "API through the local stack (warm containers per function, up to the stack's concurrency), milliseconds",
        f"{'GET lead, one client':<44} {'p50':>8} {'p99':>8}",
        f"{'baseline: lambda_handler in process':<44} {base['handlerInProcess']['p50_ms']:8.1f} "
        f"{base['handlerInProcess']['p99_ms']:8.1f}",
        f"{'baseline: gateway only (GET /_local/clock)':<44} {base['gatewayOnly']['p50_ms']:8.1f} "
        f"{base['gatewayOnly']['p99_ms']:8.1f}",
        f"{'through the stack':<44} {one['p50_ms']:8.1f} {one['p99_ms']:8.1f}   "
        f"p50 ≤ {targets['oneClientP50Ms']:.0f}: {_yes(meets['oneClientP50'])}, "
        f"p99 ≤ {targets['oneClientP99Ms']:.0f}: {_yes(meets['oneClientP99'])}",
        "",
        f"{results['clients']} concurrent clients × {results['requestsPerClient']} requests each",
        f"{'operation':<12} {'p50':>8} {'p95':>8} {'p99':>8} {'req/s':>8} {'5xx':>5}",
    ]
    for name in ("get", "list", "create"):
        row = results[name]
        lines.append(
            f"{name:<12} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['p99_ms']:8.1f} "
            f"{row['requestsPerSecond']:8.1f} {row['serverErrors']:5d}"
        )
    lines += [
        f"get p50 vs one client: {results['concurrentP50Ratio']:.2f}× "
        f"(≤ {targets['concurrentP50Ratio']:.0f}×: {_yes(meets['concurrentP50Ratio'])})",
        f"{burst['clients']} clients at once, new connection per request ({burst['requests']} creates, captures, "
        f"GETs): resets {burst['resets']}, 5xx {burst['serverErrors']} (0 and 0: "
        f"{_yes(meets['burstResets'] and meets['burstServerErrors'])}); {burst['outcomes']}",
        f"zero 5xx: {_yes(results['zeroServerErrors'])}",
    ]
    return lines
