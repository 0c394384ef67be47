"""INSERT … ON CONFLICT DO NOTHING that SQLAlchemy compiles once, then takes from its cache.

SQLAlchemy 2.0 never caches a PostgreSQL INSERT (`postgresql.Insert.inherit_cache = False`: its ON CONFLICT
clause has no cache key), so each execution compiles the statement anew: about a millisecond for an
INSERT … SELECT from a recordset, paid several times per SQS batch on the ingestion path (claims, campaign
hooks, threads, messages). `insert_skipping_conflicts` gives the clause its key (the conflict target's column
names, its WHERE), so the statement is cached like any other. Any other ON CONFLICT clause put on it (DO
UPDATE) has no key, and the statement is then compiled every time, as SQLAlchemy does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects.postgresql.dml import Insert, OnConflictDoNothing
from sqlalchemy.sql.visitors import InternalTraversal


class _OnConflictDoNothing(OnConflictDoNothing):
    inherit_cache = True
    _cache_key_traversal = [
        ("_target_names", InternalTraversal.dp_string_list),
        ("inferred_target_whereclause", InternalTraversal.dp_clauseelement),
    ]

    @property
    def _target_names(self) -> list[str]:
        return [str(name) for name in self.inferred_target_elements or ()]


class CachedInsert(Insert):
    """A PostgreSQL INSERT whose cache key is the standard INSERT's, ON CONFLICT clause included."""

    inherit_cache = True


def insert_skipping_conflicts(table: Table, index_elements: Sequence[str], index_where: Any = None) -> CachedInsert:
    """`postgresql.insert(table).on_conflict_do_nothing(index_elements=…, index_where=…)`, cached. The
    conflict target is named by column names (strings): they are the cache key."""
    if not all(isinstance(name, str) for name in index_elements):
        raise TypeError("the conflict target is named by column names")
    statement = CachedInsert(table)
    statement._post_values_clause = _OnConflictDoNothing(index_elements=list(index_elements), index_where=index_where)
    return statement
