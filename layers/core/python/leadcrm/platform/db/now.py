"""The clock's instant in SQL: statements compare and stamp with `sql_now()`, never PostgreSQL's `now()`.

`now()`, `CURRENT_TIMESTAMP` and their kin read the database server's clock, which the local stack cannot move
(`leadcrm.platform.clock`). `sql_now()` is one bound parameter whose value is read from the clock when the
statement executes: every place a statement uses it gets the same instant, as `now()` did within a statement,
and a cached compiled statement still reads a fresh one. Raw `text()` statements take `:now` bound to
`clock.now()` instead. Column server defaults (`server_default=func.now()`) stay only as a fallback for rows
written by hand; the tables' Python-side defaults (`clock_default`) give every insert and update the clock.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BindParameter, DateTime, bindparam

from leadcrm.platform import clock

# One parameter object, shared by every statement: the same name in one statement is one value, read once
# per execution (`callable_`), so `updated_at = :clock_now, status_changed_at = :clock_now` stay equal.
_SQL_NOW: BindParameter[datetime] = bindparam("clock_now", type_=DateTime(timezone=True), callable_=clock.now)


def sql_now() -> BindParameter[datetime]:
    """The clock's instant as a typed bound parameter (timestamptz), for SQLAlchemy Core statements."""
    return _SQL_NOW


def clock_default() -> BindParameter[datetime]:
    """A column's `default=`/`onupdate=`: the clock's instant, the same parameter the statement's own
    `sql_now()` uses, so a row's stamps written by one statement agree."""
    return _SQL_NOW
