"""Rows into a table with PostgreSQL's COPY FROM STDIN, in one round trip, streamed.

A bulk write through one multi-row statement makes the server parse every value out of the statement (or
out of a JSON document) and makes pg8000 build the statement in Python; COPY's text format is the cheapest
thing for both ends. The rows go through pg8000's COPY support on the SQLAlchemy Connection's own DBAPI
connection, so they land in the Connection's transaction (a TEMP staging table of that transaction, say).

Text format: columns separated by a tab, rows by a newline, `\\N` for NULL, and a backslash, tab, newline or
carriage return inside a value escaped with a backslash (https://www.postgresql.org/docs/15/sql-copy.html).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from sqlalchemy import Connection

NULL = "\\N"
# Strings of about this many characters per CopyData message: pg8000 sends (and flushes) one message per item.
BATCH_CHARS = 64 * 1024
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def copy_value(value: str | None) -> str:
    """One value in COPY text format. NUL cannot be sent (PostgreSQL text cannot hold it): callers reject it."""
    if value is None:
        return NULL
    if "\x00" in value:
        raise ValueError("PostgreSQL text cannot hold a NUL character")
    return value.translate(_ESCAPES)


def copy_fields(values: Sequence[str | None]) -> str:
    """Values in COPY text format, tab-separated: a line without its newline (or a part of one, which the
    caller joins to the rest with a tab)."""
    return "\t".join(copy_value(value) for value in values)


def copy_line(values: Sequence[str | None]) -> str:
    return copy_fields(values) + "\n"


def copy_text(lines: Iterable[str]) -> Iterator[str]:
    """Lines in COPY text format, a batch at a time (never the whole input at once)."""
    batch: list[str] = []
    size = 0
    for line in lines:
        batch.append(line)
        size += len(line)
        if size >= BATCH_CHARS:
            yield "".join(batch)
            batch, size = [], 0
    if batch:
        yield "".join(batch)


def copy_rows(conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[str | None]]) -> int:
    """COPY the rows (each a value, as text, or None, per column) into `table`; the number of rows copied.

    `table` and `columns` are identifiers of the caller's own SQL, never input."""
    return copy_lines(conn, table, columns, (copy_line(row) for row in rows))


def copy_lines(conn: Connection, table: str, columns: Sequence[str], lines: Iterable[str]) -> int:
    """COPY lines already in COPY text format (`copy_line`, or parts joined from `copy_fields`)."""
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(f"COPY {table} ({', '.join(columns)}) FROM STDIN", stream=copy_text(lines))
        return int(cursor.rowcount)
    finally:
        cursor.close()
