"""How many SQL statements a request or a unit of work sent, and how long PostgreSQL took over them.

The engine (engine.py) counts every statement it executes into the current thread's tally (a contextvar):
the API opens a fresh tally per request (`counting`) for its request log line; each unit of work reads the
tally's difference across itself into its trace subsegment (`traced_unit`).

Traced per unit of work, not per statement. A subsegment costs ~70 µs of CPU on our machines (built,
serialised and sent to the X-Ray daemon as a datagram of its own, as Powertools configures streaming); a
512 MB function has ~0.3 vCPU, so ~250 µs there: a quarter of a statement's ~1 ms round trip through RDS
Proxy, on every statement of every request and job (a job's batch sends hundreds). Per unit of work it is
paid once, and the trace still tells database time from the rest: the unit's duration, its statement count
and their time. A request that sends too many statements shows in its count (and in the API's request log
line), which is what a per-statement trace would be read for, and no SQL text goes to the traces.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from leadcrm.platform.telemetry import SERVICE, subsegment


@dataclass
class Tally:
    statements: int = 0
    seconds: float = 0.0  # of the statements that completed (a failed one is counted, not timed)
    started: float = 0.0  # the statement under way (a thread executes one at a time)

    @property
    def milliseconds(self) -> float:
        return round(self.seconds * 1000, 1)


_tally: ContextVar[Tally | None] = ContextVar("leadcrm_statement_tally", default=None)


def current() -> Tally:
    """The tally statements are counted into now (one per thread unless `counting` opened another)."""
    tally = _tally.get()
    if tally is None:
        tally = Tally()
        _tally.set(tally)
    return tally


@contextmanager
def counting() -> Iterator[Tally]:
    """A fresh tally for the block (an API request): the statements it sends, whatever units of work."""
    tally = Tally()
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


def before_cursor_execute(*_args: Any) -> None:
    """SQLAlchemy's before_cursor_execute event (engine.py): one more statement."""
    tally = current()
    tally.statements += 1
    tally.started = time.perf_counter()


def after_cursor_execute(*_args: Any) -> None:
    tally = current()
    tally.seconds += time.perf_counter() - tally.started


@contextmanager
def traced_unit(name: str) -> Iterator[None]:
    """An X-Ray subsegment around one unit of work (in Lambda only), with the statements it sent and their
    time as metadata; an exception leaving it is recorded on it. Nothing but the tally's read when not tracing."""
    tally = current()
    statements, seconds = tally.statements, tally.seconds
    with subsegment(name) as segment:
        try:
            yield
        finally:
            if segment is not None:
                segment.put_metadata("statements", tally.statements - statements, SERVICE)
                segment.put_metadata("statementMs", round((tally.seconds - seconds) * 1000, 1), SERVICE)
