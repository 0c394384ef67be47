"""Creating and dropping whole databases on the test server (the session database, scratch databases)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from leadcrm.platform.db.engine import pg8000_url


def throwaway_database_name() -> str:
    return f"leadcrm_test_{uuid.uuid4().hex[:12]}"


def _admin_engine(server_url: str) -> Engine:
    return create_engine(
        pg8000_url(server_url).set(database="postgres"), isolation_level="AUTOCOMMIT", poolclass=NullPool
    )


def create_database(server_url: str, name: str, *, template: str | None = None) -> str:
    """CREATE DATABASE `name` on the server of `server_url` (a copy of `template` if given); returns the URL
    of the new database."""
    statement = f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
    admin = _admin_engine(server_url)
    try:
        for attempt in range(50):
            try:
                with admin.connect() as conn:
                    conn.execute(text(statement))
                break
            except DBAPIError as error:
                # 55006: someone is connected to the template (a copy needs it to itself); it passes.
                if template is None or _sqlstate(error) != "55006" or attempt == 49:
                    raise
                time.sleep(0.1)
    finally:
        admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def _sqlstate(error: DBAPIError) -> str | None:
    detail = error.orig.args[0] if error.orig is not None and error.orig.args else None
    return detail.get("C") if isinstance(detail, dict) else None


def drop_database(server_url: str, name: str) -> None:
    admin = _admin_engine(server_url)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def engine_for(url: str) -> Engine:
    """A private engine (no pooling) for tests that need connections of their own, e.g. racing threads."""
    return create_engine(pg8000_url(url), poolclass=NullPool)


class StatementLog:
    """SQL statements sent through an engine while the log is open."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def __len__(self) -> int:
        return len(self.statements)

    def clear(self) -> None:
        self.statements.clear()

    def describe(self) -> str:
        return "\n".join(f"  {i + 1}. {' '.join(s.split())[:160]}" for i, s in enumerate(self.statements))


@contextmanager
def count_statements(engine: Engine) -> Iterator[StatementLog]:
    log = StatementLog()

    def _record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        log.statements.append(statement)

    event.listen(engine, "before_cursor_execute", _record)
    try:
        yield log
    finally:
        event.remove(engine, "before_cursor_execute", _record)
