"""Product code reads the time through `leadcrm.platform.clock` only, in Python and in SQL, so the local stack
can play time forward: a `datetime.now(` elsewhere, or a statement's `now()`/CURRENT_TIMESTAMP (PostgreSQL's
clock, which nobody moves), would be real time in the middle of a played-forward scenario.

Migrations are exempt (DDL and column server defaults, a fallback for rows written by hand), and so are the
tables' `server_default=func.now()`: every insert our code makes gets the clock's instant from the column's
Python-side default (`platform.db.columns.stamp_column`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FOLDERS = ("functions", "layers/core/python/leadcrm")
EXEMPT = ("layers/core/python/leadcrm/platform/db/migrations/",)
CLOCK = "layers/core/python/leadcrm/platform/clock.py"

# formatdate() without an instant reads time.time() (a mail's Date header is product time too).
PYTHON_TIME = re.compile(r"\b(datetime\.(now|utcnow|today)\(|date\.today\(|time\.time\(\)|formatdate\()")
SQL_TIME = re.compile(
    r"\bfunc\.(now|current_timestamp|current_date|localtimestamp|localtime|current_time|clock_timestamp|"
    r"statement_timestamp|transaction_timestamp)\(|"
    r"(?<![.\w])(now|clock_timestamp|statement_timestamp|transaction_timestamp)\(\)|"
    r"\b(CURRENT_DATE|CURRENT_TIMESTAMP|CURRENT_TIME|LOCALTIMESTAMP|LOCALTIME|current_date|current_timestamp|"
    r"localtimestamp)\b(?!\s*=)"
)
SERVER_DEFAULT = re.compile(r"server_default=(func\.now\(\)|text\(\"now\(\)\"\))")


def _product_lines() -> list[tuple[str, int, str]]:
    return [
        (str(path.relative_to(ROOT)), number, line)
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(EXEMPT)
        for number, line in enumerate(path.read_text().splitlines(), 1)
    ]


def _code(line: str) -> str:
    """The line without its comment and its `quoted` code (documentation may name now() to say why it is not
    used)."""
    return re.sub(r"`[^`]*`", "", line.split("#", 1)[0])


def test_no_product_code_reads_the_time_but_the_clock():
    offenders = [
        f"{path}:{number}: {line.strip()}"
        for path, number, line in _product_lines()
        if path != CLOCK and PYTHON_TIME.search(_code(line))
    ]
    assert offenders == []


def test_no_statement_reads_the_database_servers_clock():
    offenders = [
        f"{path}:{number}: {line.strip()}"
        for path, number, line in _product_lines()
        if path != CLOCK and SQL_TIME.search(SERVER_DEFAULT.sub("", _code(line)))
    ]
    assert offenders == []


def test_the_checks_catch_what_they_forbid():
    # The patterns themselves, on the forms they are there for (a check that matched nothing would pass).
    for line in ("at = datetime.now(UTC)", "date.today()", "stamp = time.time()", "formatdate(localtime=False)"):
        assert PYTHON_TIME.search(line)
    for line in (
        ".values(updated_at=func.now())",
        'text("SELECT now()")',
        "WHERE due < CURRENT_TIMESTAMP",
        "current_date - 1",
        "func.current_timestamp()",
    ):
        assert SQL_TIME.search(line), line
    assert not SQL_TIME.search(SERVER_DEFAULT.sub("", 'Column("x", server_default=func.now(), default=d)'))
