"""The region an organization reads national phone numbers in: its country, else its timezone's, else none."""

from __future__ import annotations

import pytest

from leadcrm.directory.rules import is_country_code, phone_region


def test_the_country_is_the_region():
    assert phone_region("IL", "America/New_York") == "IL"


def test_a_lower_case_country_is_read_in_upper_case():
    assert phone_region("il", None) == "IL"


def test_without_a_country_the_timezones_country_is_the_region():
    assert phone_region(None, "Asia/Jerusalem") == "IL"
    assert phone_region("", "Europe/London") == "GB"


@pytest.mark.parametrize("timezone", ["UTC", "Etc/GMT-3", "Israel", None, "Not/A_Zone"])
def test_a_timezone_of_no_single_country_gives_no_region(timezone):
    assert phone_region(None, timezone) is None


def test_a_timezones_country_phone_numbers_cannot_be_read_in_gives_no_region():
    # Antarctica's zones are in "AQ", which has no numbering plan of its own.
    assert phone_region(None, "Antarctica/McMurdo") is None


@pytest.mark.parametrize("code", ["IL", "US", "GB", "DE", "BR", "JP"])
def test_country_codes_are_those_phone_numbers_can_be_read_in(code):
    assert is_country_code(code)


@pytest.mark.parametrize("code", ["XX", "il", "ISR", "", "001", "EU", "UK"])
def test_other_codes_are_not_countries(code):
    assert not is_country_code(code)
