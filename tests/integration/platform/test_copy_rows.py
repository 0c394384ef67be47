"""leadcrm.platform.db.copy: rows COPYed into a table read back as they were sent, whatever their text
(tabs, newlines, carriage returns, backslashes, quotes, `\\N` written out, any Unicode) and NULL as NULL,
in the Connection's own transaction."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from leadcrm.platform.db.copy import BATCH_CHARS, copy_rows, copy_value
from leadcrm.platform.db.engine import get_engine

# Any text PostgreSQL can hold (no NUL, no lone surrogate), weighted towards what COPY's format escapes.
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")) | st.lists(
    st.sampled_from(["\\", "\t", "\n", "\r", "N", '"', "'", ",", "\\N", "\\.", "é", "\u2028", " "])
).map("".join)
VALUES = st.none() | TEXT


def _copied(rows: list[tuple[str | None, str | None]]) -> list[tuple[str | None, str | None]]:
    with get_engine().connect() as conn:
        conn.execute(text("CREATE TEMP TABLE copied (n integer, a text, b text) ON COMMIT DROP"))
        count = copy_rows(conn, "copied", ["n", "a", "b"], [(str(i), a, b) for i, (a, b) in enumerate(rows)])
        assert count == len(rows)
        found = conn.execute(text("SELECT a, b FROM copied ORDER BY n")).all()
        conn.rollback()
    return [tuple(row) for row in found]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(VALUES, VALUES), min_size=1, max_size=20))
def test_any_text_or_null_reads_back_as_it_was_copied(rows):
    assert _copied(rows) == rows


def test_the_literal_backslash_n_is_text_and_none_is_null():
    assert _copied([("\\N", None), ("", "\\")]) == [("\\N", None), ("", "\\")]


def test_rows_beyond_one_batch_all_arrive_in_order():
    rows = [(f"row {i}\t{'x' * 100}", None) for i in range(2 * BATCH_CHARS // 100)]
    assert _copied(rows) == rows


def test_a_nul_character_is_refused_before_anything_is_sent():
    with pytest.raises(ValueError, match="NUL"):
        copy_value("a\x00b")
