"""pg8000's placeholder rewrite, remembered per statement text (leadcrm.platform.db.paramstyle), answers
exactly what pg8000's own rewrite answers, for every paramstyle, whatever quotes, comments and escapes the
statement holds, and the second time from the cache."""

from __future__ import annotations

import pg8000.legacy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pg8000.dbapi import convert_paramstyle as pg8000_convert_paramstyle

from leadcrm.platform.db import paramstyle

# Pieces of SQL that change how a placeholder is read: quotes, quoted identifiers, E'' escapes, dollar
# quotes, comments, casts, %% escapes.
PIECES = st.sampled_from(
    [
        "SELECT ",
        " x ",
        "'it''s %s'",
        '"col %s"',
        "E'\\' %s'",
        "$$ %s $$",
        "-- %s\n",
        "::text",
        "%%",
        ", ",
        "(",
        ")",
    ]
)
FORMAT_STATEMENTS = st.lists(st.one_of(PIECES, st.just("%s")), max_size=12).map("".join)
NAMED_STATEMENTS = st.lists(
    st.one_of(PIECES.filter(lambda p: "%" not in p), st.sampled_from([":a", ":b"])), max_size=12
).map("".join)
PYFORMAT_STATEMENTS = st.lists(st.one_of(PIECES, st.sampled_from(["%(a)s", "%(b)s"])), max_size=12).map("".join)


def outcome(style, query, args):
    """The rewrite's answer, or the error it raises (type and message)."""
    convert = paramstyle.convert_paramstyle if style.startswith("ours:") else pg8000_convert_paramstyle
    try:
        return convert(style.removeprefix("ours:"), query, args)
    except Exception as error:  # noqa: BLE001 - the very error is what is compared
        return type(error), str(error)


def same_as_pg8000(style, query, args):
    return outcome(f"ours:{style}", query, args) == outcome(style, query, args)


@settings(max_examples=300)
@given(FORMAT_STATEMENTS)
def test_format_statements_rewrite_as_pg8000_rewrites_them(query):
    args = tuple(range(query.count("%s")))
    assert same_as_pg8000("format", query, args)


@settings(max_examples=300)
@given(NAMED_STATEMENTS)
def test_named_statements_rewrite_as_pg8000_rewrites_them(query):
    args = {"a": 1, "b": 2}
    assert same_as_pg8000("named", query, args)


@settings(max_examples=300)
@given(PYFORMAT_STATEMENTS)
def test_pyformat_statements_rewrite_as_pg8000_rewrites_them(query):
    args = {"a": 1, "b": 2}
    assert same_as_pg8000("pyformat", query, args)


def test_the_values_are_each_calls_own():
    query = "SELECT %s, %s"
    assert paramstyle.convert_paramstyle("format", query, (1, 2)) == ("SELECT $1, $2", (1, 2))
    assert paramstyle.convert_paramstyle("format", query, (3, 4)) == ("SELECT $1, $2", (3, 4))


def test_a_statement_is_scanned_once():
    query = "SELECT %s /* scanned once */"
    before = paramstyle._rewrite.cache_info().misses
    for value in range(5):
        paramstyle.convert_paramstyle("format", query, (value,))
    assert paramstyle._rewrite.cache_info().misses == before + 1


def test_a_very_long_statement_is_rewritten_without_the_cache():
    query = "SELECT %s" + " " * paramstyle.MAX_CACHED_LENGTH
    before = paramstyle._rewrite.cache_info().currsize
    assert paramstyle.convert_paramstyle("format", query, (1,))[0].startswith("SELECT $1")
    assert paramstyle._rewrite.cache_info().currsize == before


def test_a_malformed_placeholder_is_refused_as_pg8000_refuses_it():
    with pytest.raises(pg8000.InterfaceError):
        paramstyle.convert_paramstyle("format", "SELECT %d", (1,))


def test_the_engine_installs_the_cache_for_pg8000s_cursors():
    paramstyle.install()
    assert pg8000.legacy.convert_paramstyle is paramstyle.convert_paramstyle
