"""Phones read the same whichever way they were typed: every spelling of a number finds (lead search) and
deduplicates against (intake) every other, in the organization's region.

Numbers are drawn from the `phonenumbers` metadata: a region whose national spelling is its trunk zero and
the national significant number, an example number of it with its last digits redrawn (kept when still valid).
"""

from __future__ import annotations

import itertools

import phonenumbers
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from leadcrm.leads.rules.intake import phone_digits, same_phone
from leadcrm.leads.rules.listing import parse_search

TYPES = (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE)


def _trunk_zero_regions() -> list[str]:
    """Regions whose national format is "0" + the national significant number (Israel, Britain, Germany…)."""
    regions = []
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
        if metadata is None or metadata.national_prefix != "0":
            continue
        examples = [phonenumbers.example_number_for_type(region, kind) for kind in TYPES]
        if all(
            example is not None
            and phone_digits(phonenumbers.format_number(example, phonenumbers.PhoneNumberFormat.NATIONAL))
            == "0" + phonenumbers.national_significant_number(example)
            for example in examples
        ):
            regions.append(region)
    return regions


REGIONS = _trunk_zero_regions()


def test_the_drawn_regions_are_many_and_include_the_usual_ones():
    assert len(REGIONS) > 80 and {"IL", "GB", "DE", "FR"} <= set(REGIONS)


@st.composite
def numbers(draw: st.DrawFn) -> tuple[str, phonenumbers.PhoneNumber]:
    region = draw(st.sampled_from(REGIONS))
    example = phonenumbers.example_number_for_type(region, draw(st.sampled_from(TYPES)))
    national = phonenumbers.national_significant_number(example)
    keep = len(national) - draw(st.integers(min_value=1, max_value=min(4, len(national) - 1)))
    redrawn = national[:keep] + "".join(
        draw(st.lists(st.sampled_from("0123456789"), min_size=len(national) - keep, max_size=len(national) - keep))
    )
    number = phonenumbers.parse(f"+{example.country_code}{redrawn}")
    assume(phonenumbers.is_valid_number(number))
    return region, number


@st.composite
def grouped(draw: st.DrawFn, digits: str) -> str:
    """The digits in groups, as people type them: "050-123-4567", "050 1234567", "(050) 123 4567"."""
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=len(digits) - 1), max_size=3)))
    parts = [digits[a:b] for a, b in itertools.pairwise([0, *cuts, len(digits)])]
    separator = draw(st.sampled_from(["-", " ", ".", " - "]))
    if len(parts) > 1 and draw(st.booleans()):
        return f"({parts[0]}) " + separator.join(parts[1:])
    return separator.join(parts)


@st.composite
def spellings(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A region and its number spelled: national with the trunk zero, plain and grouped; +CC and 00CC,
    plain and grouped; and the library's own national and international formats."""
    region, number = draw(numbers())
    cc, national = str(number.country_code), phonenumbers.national_significant_number(number)
    spelled = [
        "0" + national,
        draw(grouped("0" + national)),
        f"+{cc}{national}",
        f"+{cc} " + draw(grouped(national)),
        f"00{cc}{national}",
        f"00 {cc} " + draw(grouped(national)),
        phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL),
        phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL),
    ]
    return region, spelled


def _search_finds(term: str, stored: str, region: str | None) -> bool:
    """What `leads.phone_digits LIKE ANY(patterns)` answers for a lead stored with `stored`."""
    patterns = parse_search(term).phone_patterns(region)
    return any(pattern.strip("%") in (phone_digits(stored) or "") for pattern in patterns)


@settings(max_examples=40, deadline=None)
@given(spellings())
def test_every_spelling_deduplicates_against_every_other_in_the_region(case):
    region, spelled = case
    wrong = [(a, b) for a, b in itertools.permutations(spelled, 2) if not same_phone(a, b, region)]
    assert not wrong, (region, wrong)


@settings(max_examples=40, deadline=None)
@given(spellings())
def test_every_spelling_finds_a_lead_stored_in_every_other_in_the_region(case):
    region, spelled = case
    wrong = [
        (term, stored) for term, stored in itertools.permutations(spelled, 2) if not _search_finds(term, stored, region)
    ]
    assert not wrong, (region, wrong)


@settings(max_examples=25, deadline=None)
@given(spellings())
def test_without_a_region_international_spellings_still_find_and_deduplicate_national_ones(case):
    """An organization of no known country: "+CC…" and "00CC…" still find "0…" (the digits after the
    country code), and the international spellings deduplicate against each other."""
    _, spelled = case
    national, international = spelled[:2], spelled[2:6]
    assert all(_search_finds(term, stored, None) for term in international for stored in national)
    assert all(same_phone(a, b, None) for a, b in itertools.permutations(international, 2))


@pytest.mark.parametrize(
    ("term", "stored"),
    [
        ("+972501234567", "050-1234567"),
        ("050-1234567", "+972501234567"),
        ("00972 50 123 4567", "050 123 4567"),
        ("972501234567", "050-1234567"),
        ("+972 50-12", "050-1234567"),  # an international number typed only in part
    ],
)
def test_the_issues_examples_find_each_other_in_israel(term, stored):
    assert _search_finds(term, stored, "IL")


def test_a_region_with_another_trunk_prefix_is_read_in_the_region():
    # Russia dials 8 before a national number: only the region says that "8 912…" is "+7 912…".
    assert _search_finds("8 (912) 345-67-89", "+79123456789", "RU")
    assert same_phone("8 (912) 345-67-89", "+7 912 345 67 89", "RU")


def test_a_number_written_with_00_from_a_region_that_dials_abroad_otherwise_is_still_that_number():
    # Japan dials 010 abroad; a visitor writes their British number as they would at home.
    assert same_phone("0044 7700 900123", "+447700900123", "JP")


def test_a_partial_term_matches_only_where_its_digits_are():
    assert not _search_finds("+972 52-12", "050-1234567", "IL")
