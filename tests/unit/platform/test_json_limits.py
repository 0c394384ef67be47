"""JSON from outside is parsed with limits: depth, number sizes, size; refusals are JsonRefused, never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.platform.json_limits import (
    MAX_DEPTH,
    MAX_INTEGER_DIGITS,
    BodyTooLarge,
    JsonRefused,
    loads,
    within_depth,
)

SCALARS = st.none() | st.booleans() | st.integers(-(10**18), 10**18) | st.floats(allow_nan=False, allow_infinity=False)
# Keys and strings with brackets, quotes and escapes in them: the depth check must look past every one.
TEXT = st.text(alphabet=st.sampled_from('ab[]{}"\\\x00é\n,:'), max_size=12)
VALUES = st.recursive(
    SCALARS | TEXT, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4)
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@settings(max_examples=200)
@given(VALUES)
def test_json_within_the_limits_reads_as_the_standard_parser_reads_it(value):
    text = json.dumps(value)
    assert loads(text) == json.loads(text)


@settings(max_examples=200)
@given(VALUES)
def test_the_depth_check_counts_only_brackets_outside_strings(value):
    assert within_depth(json.dumps(value)) == (_depth(value) <= MAX_DEPTH)


def test_nesting_up_to_the_limit_is_read():
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert loads(_nested(MAX_DEPTH)) is not None


@pytest.mark.parametrize("text", ["[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), _nested(MAX_DEPTH + 1), "[" * 100_000])
def test_deeper_nesting_is_refused_as_malformed(text):
    with pytest.raises(JsonRefused) as refused:
        loads(text)
    assert (refused.value.status, refused.value.code) == (400, "MALFORMED_JSON")


def test_a_mismatched_deep_text_is_refused_without_recursion():
    with pytest.raises(JsonRefused):
        loads("[" * 5000 + "}" * 5000)


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"note": "[" * 1000, "quote": '\\"{{{{'})
    assert loads(text)["note"] == "[" * 1000


def test_an_integer_up_to_the_digit_limit_is_read():
    assert loads("-" + "9" * MAX_INTEGER_DIGITS) == -int("9" * MAX_INTEGER_DIGITS)


@pytest.mark.parametrize("digits", [MAX_INTEGER_DIGITS + 1, 5000, 100_000])
def test_a_longer_integer_is_refused(digits):
    with pytest.raises(JsonRefused, match="digits"):
        loads('{"n": ' + "7" * digits + "}")


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"x": -Infinity}', "1e999", "0." + "1" * 100])
def test_numbers_no_json_answer_can_hold_are_refused(text):
    with pytest.raises(JsonRefused):
        loads(text)


@pytest.mark.parametrize("text", ["", "{", '{"a": }', "[1,]", "\udcff"])
def test_malformed_json_is_refused(text):
    with pytest.raises(JsonRefused) as refused:
        loads(text)
    assert refused.value.code == "MALFORMED_JSON"


def test_bytes_that_are_not_utf8_are_refused():
    with pytest.raises(JsonRefused, match="UTF-8"):
        loads(b'{"a": "\xff"}')


def test_a_body_over_its_size_limit_is_a_413_in_characters_or_in_bytes():
    with pytest.raises(BodyTooLarge) as refused:
        loads('"' + "a" * 100 + '"', max_bytes=100)
    assert (refused.value.status, refused.value.code) == (413, "BODY_TOO_LARGE")
    with pytest.raises(BodyTooLarge):
        loads('"' + "é" * 40 + '"', max_bytes=80)  # 42 characters, 82 bytes
    assert loads('"' + "é" * 39 + '"', max_bytes=80) == "é" * 39


def test_a_cursor_that_nests_deep_is_an_invalid_cursor_not_a_crash():
    import base64

    from leadcrm.platform.errors import BadRequest
    from leadcrm.platform.keyset import decode_keyset

    cursor = base64.urlsafe_b64encode(b"[" * 5000).decode()
    with pytest.raises(BadRequest) as refused:
        decode_keyset(cursor, 1)
    assert refused.value.code == "INVALID_CURSOR"
