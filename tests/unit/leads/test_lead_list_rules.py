"""leadcrm.leads.rules.listing: the search term, LIKE escaping and the bounds of a list request."""

from __future__ import annotations

import pytest

from leadcrm.leads.rules.listing import (
    MAX_STAGE_IDS,
    MAX_TAG_IDS,
    LeadListFilters,
    LeadSort,
    ListCursor,
    SortOrder,
    escape_like,
    parse_search,
    unique,
)
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.ids import uuid7

# -- search -----------------------------------------------------------------------------------------------


def test_no_search_term_means_no_search():
    assert parse_search(None) is None


def test_a_search_term_is_trimmed_and_inner_whitespace_collapsed():
    assert parse_search("  Ada \t  Love ").text == "Ada Love"


@pytest.mark.parametrize("raw", ["a", " a ", "  ", "x" * 101])
def test_a_search_term_shorter_than_2_or_longer_than_100_characters_is_refused(raw):
    with pytest.raises(BadRequest) as raised:
        parse_search(raw)
    assert raised.value.code == "VALIDATION_FAILED"


def test_search_terms_of_2_and_100_characters_are_accepted():
    assert parse_search("ab").text == "ab"
    assert parse_search("x" * 100).text == "x" * 100


def test_a_search_term_with_a_nul_character_is_refused():
    with pytest.raises(BadRequest):
        parse_search("ad\x00a")


def test_a_term_with_fewer_than_3_digits_does_not_search_phones():
    assert parse_search("ada 12").digits is None
    assert parse_search("ada 12").phone_patterns("IL") == ()


def test_a_term_with_3_digits_or_more_searches_phones_by_its_digits():
    assert parse_search("050-123 45").digits == "05012345"


def test_a_phone_term_with_a_trunk_zero_matches_without_it_which_also_finds_it_with_it():
    assert parse_search("050-1234").phone_patterns(None) == ("%501234%",)


def test_a_phone_term_without_a_trunk_zero_matches_as_typed_only():
    assert parse_search("501234").phone_patterns(None) == ("%501234%",)


def test_like_wildcards_in_a_term_are_matched_literally():
    assert escape_like(r"50%_a\b") == r"50\%\_a\\b"
    assert parse_search("10%").contains_pattern == r"%10\%%"


# -- bounds -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, 201, -5])
def test_a_page_size_outside_1_to_200_is_refused(limit):
    with pytest.raises(BadRequest):
        LeadListFilters(limit=limit)


def test_more_than_the_maximum_tag_ids_is_refused():
    LeadListFilters(tag_ids=tuple(uuid7() for _ in range(MAX_TAG_IDS)))
    with pytest.raises(BadRequest):
        LeadListFilters(tag_ids=tuple(uuid7() for _ in range(MAX_TAG_IDS + 1)))


def test_more_than_the_maximum_stage_ids_is_refused():
    with pytest.raises(BadRequest):
        LeadListFilters(stage_ids=tuple(uuid7() for _ in range(MAX_STAGE_IDS + 1)))


def test_a_cursor_for_another_sort_cannot_continue_a_list():
    from datetime import UTC, datetime

    cursor = ListCursor(sort=LeadSort.UPDATED_AT, order=SortOrder.DESC, key=datetime.now(UTC), id=uuid7())
    with pytest.raises(BadRequest) as raised:
        LeadListFilters(sort=LeadSort.CREATED_AT, after=cursor)
    assert raised.value.code == "INVALID_CURSOR"


def test_repeated_filter_values_count_once_in_their_first_order():
    assert unique(["b", "a", "b"]) == ("b", "a")
    assert unique(None) == ()
