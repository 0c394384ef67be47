"""Unit of work: one transaction that rolls back unless committed, and collects domain events.

The events are written to the outbox in the same transaction, so a lead and its `lead.created` either both
exist or neither does: by the unit's last write when it says so (`execute_with_events`: the outbox rows are a
data-modifying CTE of that statement, no round trip of their own), else by one INSERT at commit. After the
commit they are handed to the publisher (up to INLINE_PUBLISH_LIMIT of them). Their rows say so: a row the
request publishes is written with its attempt counted (attempts = 1), one left to the relay with none. The
publisher writes nothing when the bus takes the events; the relay confirms them after its grace period
(`platform.outbox`).

In Lambda a unit of work is one trace subsegment, `## unit of work`, with its statement count and time
(statements.traced_unit); publishing after the commit is outside it (its PutEvents calls are their own).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, CursorResult, DateTime, Engine, Insert, Integer, Text, Uuid, insert, literal, select
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.statements import traced_unit
from leadcrm.platform.db.transactions import end_transaction
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.tables import outbox

logger = logging.getLogger(__name__)

Publisher = Callable[[Sequence[DomainEvent]], None]

# A request publishes at most this many events itself (a few PutEvents calls); more wait for the relay.
INLINE_PUBLISH_LIMIT = 50
_OUTBOX_COLUMNS = {
    "id": Uuid,
    "organization_id": Uuid,
    "type": Text,
    "aggregate_id": Uuid,
    "payload": JSONB,
    "occurred_at": DateTime(timezone=True),
}


def _outbox_insert(events: Sequence[DomainEvent], *, attempts: int = 0, name: str = "outbox_rows") -> Insert:
    """All the unit's events in one statement, however many a bulk operation produced. `attempts` 1: the
    request publishes them itself right after its commit (the attempt is counted with the row)."""
    # Ids written as text here, not by the JSON encoder's fallback (slower, per id): a bulk move has thousands.
    rows = [
        {
            "id": str(e.id),
            "organization_id": str(e.organization_id),
            "type": e.type,
            "aggregate_id": str(e.aggregate_id),
            "payload": e.payload,
            "occurred_at": e.occurred_at.isoformat(),
        }
        for e in events
    ]
    source = recordset(name, name, rows, _OUTBOX_COLUMNS)
    return insert(outbox).from_select(
        [*_OUTBOX_COLUMNS, "attempts"],
        select(*(source.c[n] for n in _OUTBOX_COLUMNS), literal(attempts, Integer)),
    )


# The unit of work open in this thread: an event consumer's services (ConsumerUnitOfWork) hand their events to
# it, so they are published right after its commit like a request's.
_open_unit: ContextVar[UnitOfWork | None] = ContextVar("leadcrm_open_unit_of_work", default=None)


def open_unit_on(connection: Connection) -> UnitOfWork | None:
    """The open unit of work whose connection this is, if any."""
    unit = _open_unit.get()
    return unit if unit is not None and getattr(unit, "connection", None) is connection else None


class UnitOfWork:
    def __init__(self, engine: Engine | None = None, publisher: Publisher | None = None) -> None:
        self._engine = engine
        self._publisher = publisher
        self._events: list[DomainEvent] = []
        self._written = 0  # how many of _events a statement has already put in the outbox
        self._relayed = 0  # events a statement built in the outbox itself, never held here (add_relayed_events)
        self._committed = False
        self._trace = ExitStack()
        self._opened: Token[UnitOfWork | None] | None = None
        self.connection: Connection

    def __enter__(self) -> UnitOfWork:
        self._trace.enter_context(traced_unit("## unit of work"))
        try:
            self.connection = (self._engine or get_engine()).connect()
            self.connection.begin()
        except BaseException as failed:  # no connection: the subsegment still ends, with the error
            self._trace.__exit__(type(failed), failed, failed.__traceback__)
            raise
        self._opened = _open_unit.set(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._opened is not None:
            _open_unit.reset(self._opened)
            self._opened = None
        try:
            end_transaction(self.connection, exc, committed=self._committed)
        finally:
            self._trace.__exit__(exc_type, exc, tb)
        if self._committed and (self._events or self._relayed) and exc_type is None:
            self._publish_after_commit()

    def add_event(self, event: DomainEvent) -> None:
        self._events.append(event)

    @property
    def events(self) -> tuple[DomainEvent, ...]:
        return tuple(self._events)

    def publishes_inline_with(self, more: int) -> bool:
        """Whether the request would still publish its events itself with `more` events added."""
        return len(self._events) + self._relayed + more <= INLINE_PUBLISH_LIMIT

    def add_relayed_events(self, count: int) -> None:
        """Counts `count` events that the caller's statement writes to the outbox itself, each row built by
        PostgreSQL from the rows it writes (a bulk operation's thousands), with no attempt counted: only
        when they are more than the request publishes (`publishes_inline_with`), so they are the relay's,
        and so are the unit's own events (a request publishes all of its events or none)."""
        if self.publishes_inline_with(count):
            raise ValueError("events the request publishes itself are added as DomainEvents")
        self._relayed += count

    def execute_with_events(self, statement: Any, parameters: Mapping[str, Any] | None = None) -> CursorResult[Any]:
        """Run the unit's write `statement` (a SELECT, INSERT or UPDATE) with the events added so far written
        to the outbox by the same statement, as a data-modifying CTE: the outbox costs no round trip of its
        own. Call it for the unit's last write, once its events are added; later events go in at commit.
        `parameters`: the statement's values, for a statement built once and bound at each execution."""
        pending = self._events[self._written :]
        if pending:
            statement = statement.add_cte(
                _outbox_insert(pending, attempts=self._inline_attempts(), name="unit_outbox_rows").cte("unit_outbox")
            )
            self._written = len(self._events)
        return self.connection.execute(statement, parameters)

    def flush_events(self) -> None:
        """Write the events not yet in the outbox, in one statement (commit does it; a bench times it)."""
        if self._events[self._written :]:
            self.connection.execute(_outbox_insert(self._events[self._written :], attempts=self._inline_attempts()))
            self._written = len(self._events)

    def commit(self) -> None:
        self.flush_events()
        self.connection.commit()
        self._committed = True

    def _inline_attempts(self) -> int:
        """1 when this unit's publisher will try its events right after the commit, else 0 (the relay's)."""
        return 1 if len(self._events) + self._relayed <= INLINE_PUBLISH_LIMIT else 0

    def _publish_after_commit(self) -> None:
        # Import here: functions that never publish (or tests that inject a publisher) skip boto3.
        if self._publisher is None:
            from leadcrm.platform.outbox import publish_committed

            self._publisher = publish_committed
        if len(self._events) + self._relayed > INLINE_PUBLISH_LIMIT:
            # A bulk operation's thousands of events are the relay's job, not the request's.
            logger.info("events left to the outbox relay", extra={"count": len(self._events) + self._relayed})
            return
        try:
            self._publisher(self._events)
        except Exception:  # the relay job re-sends whatever is still unpublished
            logger.exception(
                "publishing after commit failed; the outbox relay will retry",
                extra={"eventIds": [str(e.id) for e in self._events]},
            )
