"""How a transaction ends, for the unit of work and for work without events (`transaction()`): the connection
goes back to the pool only in a state known to be clean (DESIGN.md: one request can never hurt another).
Each is traced as one subsegment in Lambda (statements.traced_unit)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.statements import traced_unit
from leadcrm.platform.errors import AppError


def end_transaction(connection: Connection, exc: BaseException | None, *, committed: bool) -> None:
    """Hand the connection back to the pool only in a state known to be clean.

    A unit of work left by an exception invalidates its connection (closed, never reused; the pool opens a
    new one), whatever the exception was: a statement interrupted in the driver, a Python error between two
    statements, an interrupt. The one exception is our own AppError, a refusal the code raised on purpose
    between completed statements; the engine's handle_error guard (engine.py) has already invalidated the
    connection if a statement failed on the way, so a rollback is enough.
    """
    try:
        if exc is not None and not isinstance(exc, AppError):
            connection.invalidate(exc)
        elif not committed:
            try:
                connection.rollback()
            except BaseException as failed:
                if not connection.invalidated:
                    connection.invalidate(failed)
                raise
    finally:
        connection.close()


@contextmanager
def transaction(engine: Engine | None = None) -> Iterator[Connection]:
    """`engine.begin()` for work that needs no events (jobs' batches, the outbox's own stamps): commits when
    the block ends, rolls back and invalidates the connection like a UnitOfWork when it raises."""
    with traced_unit("## transaction"):
        connection = (engine or get_engine()).connect()
        connection.begin()
        try:
            yield connection
            connection.commit()
        except BaseException as error:
            end_transaction(connection, error, committed=False)
            raise
        connection.close()
