"""pg8000's placeholder rewriting, done once per statement text instead of on every execution.

pg8000 turns SQLAlchemy's `%s` placeholders into PostgreSQL's `$1, $2, …` with `convert_paramstyle`, a
character-by-character Python scanner run on every execute: ~0.5 µs a character, so a 3.7 kB work-queue
statement paid ~2 ms per call before it even reached the socket (issue 22). The rewrite depends only on
the paramstyle and the statement text, which SQLAlchemy's compiled cache keeps identical from call to
call, so its result is remembered here and only the parameter values are picked per call.

Installed once, process-wide, by `install()` (engine.py): pg8000's cursors look the function up in
`pg8000.legacy` at each execute. Statements longer than `MAX_CACHED_LENGTH` (multi-row INSERTs of bulk
imports, whose text varies with the row count) are rewritten as before, so the cache stays small.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import pg8000.legacy
from pg8000.dbapi import convert_paramstyle as pg8000_convert_paramstyle

MAX_CACHED_LENGTH = 16_000
CACHED_STATEMENTS = 512


class _PlaceholderNames(dict):
    """Stands in for a mapping of parameters: `args[name]` answers the name, so pg8000's rewrite tells
    which named placeholder each `$n` is."""

    def __getitem__(self, name: str) -> str:
        return name


_POSITIONAL = None  # the rewrite passes positional arguments through unchanged


@lru_cache(maxsize=CACHED_STATEMENTS)
def _rewrite(style: str, query: str) -> tuple[str, tuple[str, ...] | None]:
    """The statement with `$n` placeholders and, for named styles, the parameter name of each `$n`."""
    names = _PlaceholderNames()
    statement, vals = pg8000_convert_paramstyle(style, query, names)
    if vals is names:
        return statement, _POSITIONAL
    return statement, tuple(vals)


def convert_paramstyle(style: str, query: str, args: Sequence[Any] | Mapping[str, Any]) -> tuple[str, Any]:
    """Same contract as `pg8000.dbapi.convert_paramstyle`: (statement with `$n`, values in `$n` order)."""
    if len(query) > MAX_CACHED_LENGTH:
        return pg8000_convert_paramstyle(style, query, args)
    statement, names = _rewrite(style, query)
    if names is _POSITIONAL:
        return statement, args
    return statement, tuple(args[name] for name in names)  # type: ignore[index]


def install() -> None:
    """pg8000's cursors rewrite placeholders through the cache above (idempotent)."""
    pg8000.legacy.convert_paramstyle = convert_paramstyle
