"""The local stack's containers (infra/local/containers.py) as Lambda's concurrency: a function gets another
warm container when its warm ones are busy, up to its limit, and past it an invocation waits; containers are
reused; each sees the stack's clock and armed faults; a handler's error reaches the caller and a dead
container is replaced. The limits are parsed from `--concurrency` / LOCAL_CONCURRENCY."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from infra.local import faults
from infra.local.containers import DEFAULT_CONCURRENCY, ConcurrencyRefused, ContainerPool, parse_concurrency
from leadcrm.platform import clock

PROBE = {"probe": "tests.support.container_probe"}
PoolOf = Callable[[int], ContainerPool]


@pytest.fixture
def pool_of() -> Iterator[PoolOf]:
    pools: list[ContainerPool] = []

    def make(limit: int) -> ContainerPool:
        pool = ContainerPool({"probe": limit}, handlers=PROBE)
        pool.start()
        pool.wait_until_warm()
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.stop()


def _at_once(pool: ContainerPool, events: list[dict]) -> list[dict]:
    with ThreadPoolExecutor(len(events)) as threads:
        return list(threads.map(lambda event: pool.invoke("probe", event), events))


def test_busy_containers_make_the_function_start_more_up_to_its_limit(pool_of: PoolOf) -> None:
    pool = pool_of(2)
    answers = _at_once(pool, [{"seconds": 0.3}] * 6)
    assert len({a["pid"] for a in answers}) == 2
    assert pool.warm() == {"probe": 2}


def test_at_the_limit_an_invocation_waits_for_a_free_container_instead_of_failing(pool_of: PoolOf) -> None:
    pool = pool_of(1)
    started = time.monotonic()
    answers = _at_once(pool, [{"seconds": 0.2}] * 3)
    assert len({a["pid"] for a in answers}) == 1
    assert time.monotonic() - started >= 0.6


def test_a_warm_container_is_reused_and_runs_with_lambdas_pool_size(pool_of: PoolOf) -> None:
    pool = pool_of(4)
    first, second = pool.invoke("probe", {}), pool.invoke("probe", {})
    assert first["pid"] == second["pid"] != os.getpid()
    assert (first["function"], first["poolSize"]) == ("probe", "1")


def test_each_invocation_reads_the_stacks_clock(pool_of: PoolOf) -> None:
    pool = pool_of(1)
    clock.advance(timedelta(days=1))
    try:
        moved = pool.invoke("probe", {})["offsetSeconds"]
    finally:
        clock.reset()
    assert moved == 86400
    assert pool.invoke("probe", {})["offsetSeconds"] == 0


def test_a_fault_armed_in_the_stack_is_taken_by_the_container_and_counted_once(pool_of: PoolOf) -> None:
    pool = pool_of(2)
    faults.registry.arm("ses", "throttle", 1)
    try:
        answers = [pool.invoke("probe", {"fault": "ses"})["fault"] for _ in range(2)]
    finally:
        faults.registry.clear()
    assert answers == ["throttle", None]


def test_a_handlers_error_reaches_the_caller_and_its_container_stays_warm(pool_of: PoolOf) -> None:
    pool = pool_of(1)
    before = pool.invoke("probe", {})["pid"]
    with pytest.raises(ValueError, match="refused"):
        pool.invoke("probe", {"raise": "refused"})
    assert pool.invoke("probe", {})["pid"] == before


def test_a_container_that_died_is_replaced_by_a_new_one(pool_of: PoolOf) -> None:
    pool = pool_of(1)
    dead = pool.invoke("probe", {})["pid"]
    os.kill(dead, signal.SIGKILL)
    time.sleep(0.2)
    assert pool.invoke("probe", {})["pid"] != dead
    assert pool.warm() == {"probe": 1}


def test_a_concurrency_of_n_sets_every_function_and_names_override_it() -> None:
    assert parse_concurrency("") == DEFAULT_CONCURRENCY
    assert set(parse_concurrency("3").values()) == {3}
    assert parse_concurrency("1,api=8") == {**dict.fromkeys(DEFAULT_CONCURRENCY, 1), "api": 8}


@pytest.mark.parametrize("text", ["0", "api=0", "api=65", "api=x", "apis=2", "api=", "-1"])
def test_a_concurrency_that_is_no_limit_or_names_no_function_is_refused(text: str) -> None:
    with pytest.raises(ConcurrencyRefused):
        parse_concurrency(text)
