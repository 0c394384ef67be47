"""Running work on several threads at once, for race tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_together(
    work: list[Callable[[], Any]], *, join_seconds: float = 30
) -> tuple[list[Any], list[BaseException | None]]:
    """Runs each callable on its own thread, released together by a barrier; returns results and errors by
    slot (errors are examined on the test's thread). Fails when a thread never finishes (a deadlock)."""
    start = threading.Barrier(len(work), timeout=10)
    results: list[Any] = [None] * len(work)
    errors: list[BaseException | None] = [None] * len(work)

    def run(slot: int) -> None:
        try:
            start.wait()
            results[slot] = work[slot]()
        except BaseException as error:
            errors[slot] = error

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=join_seconds)
    assert not any(t.is_alive() for t in threads), "a thread never finished (deadlock?)"
    return results, errors
