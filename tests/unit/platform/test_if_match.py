"""The version a person's write names (api.lead_versions): If-Match is one of our ETags, or the body's version."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.lead_versions import etag, expected_version, parse_if_match
from leadcrm.platform.errors import BadRequest


@given(st.integers(min_value=1, max_value=2**31 - 1))
def test_an_etag_reads_back_as_its_version(version):
    assert parse_if_match(etag(version)) == version
    assert parse_if_match(f"W/{etag(version)}") == version
    assert parse_if_match(str(version)) == version


@pytest.mark.parametrize("raw", ["", "*", '"abc"', '"0"', '"-1"', '"1.5"', '"99999999999"', '"١٢"'])
def test_anything_else_is_invalid(raw):
    with pytest.raises(BadRequest) as refused:
        parse_if_match(raw)
    assert refused.value.code == "INVALID_IF_MATCH"


def test_no_header_and_no_body_version_is_no_check():
    assert expected_version(None, None) is None


def test_the_header_or_the_body_names_the_version():
    assert expected_version('"4"', None) == 4
    assert expected_version(None, 4) == 4
    assert expected_version('"4"', 4) == 4


def test_a_header_and_a_body_that_disagree_are_refused():
    with pytest.raises(BadRequest) as refused:
        expected_version('"4"', 5)
    assert refused.value.code == "LEAD_VERSION_AMBIGUOUS"
