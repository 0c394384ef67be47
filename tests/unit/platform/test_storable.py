"""What the engine sends PostgreSQL holds no NUL: not in text, not escaped in a JSON document, nowhere in a list
or dict parameter; and nothing else changes (bytes, other values, an escaped backslash before `u0000`)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.platform.db.storable import storable, storable_json, storable_parameters, storable_text

# Text rich in what matters here: NULs, backslashes, the letters of an escape, quotes.
TEXT = st.text(alphabet=st.sampled_from('\x00\\u0a"[{é'), max_size=16)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
)


@settings(max_examples=300)
@given(TEXT)
def test_no_nul_is_left_in_text(value):
    assert "\x00" not in storable_text(value)


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(blacklist_characters="\x00")))
def test_text_without_a_nul_or_its_escape_is_unchanged(value):
    if "\\u0000" not in value:
        assert storable_text(value) == value


@settings(max_examples=300)
@given(JSON_VALUES)
def test_a_json_document_made_storable_reads_as_the_value_without_its_nuls(value):
    document = json.dumps({"v": value})
    assert json.loads(storable_text(document)) == {"v": storable(value)}


@settings(max_examples=300)
@given(JSON_VALUES)
def test_the_json_serializer_writes_no_nul_escape(value):
    assert "\\u0000" not in storable_json(value).replace("\\\\", "")


def test_an_escaped_backslash_before_u0000_is_text_not_a_nul():
    document = json.dumps(["\\u0000", "\\\x00"])  # the six characters; a backslash then a NUL
    assert json.loads(storable_text(document)) == ["\\u0000", "\\"]


def test_parameters_of_every_shape_are_made_storable_and_other_values_kept():
    at, ident = datetime(2026, 1, 1, tzinfo=UTC), uuid.uuid4()
    parameters = ("a\x00", b"\x00raw", 5, at, ident, ["x\x00", ("y\x00",)], {"k\x00": "v\x00"}, None)
    statement, storable_ones = storable_parameters(None, None, "SELECT", parameters, None, False)
    assert statement == "SELECT"
    assert storable_ones == ("a", b"\x00raw", 5, at, ident, ["x", ("y",)], {"k": "v"}, None)
    assert storable_parameters(None, None, "SELECT", {"p": "\x00"}, None, False)[1] == {"p": ""}
