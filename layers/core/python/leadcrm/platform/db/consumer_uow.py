"""A unit of work inside the transaction of an event consumer (task_lifecycle runs one per SQS record).

Lifecycle handlers get the consumer's connection, not a UnitOfWork, yet the services they call (lead moves,
conversion) append domain events with `uow.add_event`. `ConsumerUnitOfWork` gives those services what they
expect on that connection: `write_events()` puts the collected events in the outbox in the consumer's own
transaction, so they commit (or roll back) with its writes. It never commits: the consumer does. When the
consumer's transaction is a UnitOfWork (task_lifecycle's records), the events are handed to it: written at
its commit and published right after it, so a chain of reactions does not wait for the relay at each step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, CursorResult

from leadcrm.platform.db.uow import UnitOfWork, _outbox_insert, open_unit_on


class ConsumerUnitOfWork(UnitOfWork):
    def __init__(self, connection: Connection) -> None:
        super().__init__()
        self.connection = connection

    def __enter__(self) -> ConsumerUnitOfWork:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """The consumer owns the transaction: nothing to roll back or close here."""

    def commit(self) -> None:
        raise RuntimeError("the event consumer commits its own transaction; call write_events()")

    def write_events(self) -> None:
        """The collected events into the outbox, in the consumer's transaction (once)."""
        if not self._events:
            return
        owner = open_unit_on(self.connection)
        if owner is not None:  # written at its commit (attempt counted) and published right after it
            for event in self._events:
                owner.add_event(event)
        else:
            self.connection.execute(_outbox_insert(self._events))  # attempts 0: the relay publishes them
        self._events.clear()

    def execute_with_events(self, statement: Any, parameters: Mapping[str, Any] | None = None) -> CursorResult[Any]:
        """The consumer's events go in with write_events(): the statement alone."""
        return self.connection.execute(statement, parameters)
