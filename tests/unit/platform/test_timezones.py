"""The IANA tables: which names are zones, and the one country a zone is in (zone.tab, zone1970.tab)."""

from __future__ import annotations

import pytest

from leadcrm.platform import timezones
from leadcrm.platform.timezones import country_of_timezone, is_iana_timezone


@pytest.mark.parametrize(
    ("zone", "country"),
    [
        ("Asia/Jerusalem", "IL"),
        ("America/New_York", "US"),
        ("America/Argentina/Buenos_Aires", "AR"),
        ("Europe/London", "GB"),
        ("Europe/Berlin", "DE"),  # zone1970.tab shares it with DK, NO, SE, SJ; zone.tab names Germany
        ("Europe/Copenhagen", "DK"),  # zone.tab keeps a row per country even for a merged zone
        ("Europe/Vaduz", "LI"),
        ("Asia/Kolkata", "IN"),
    ],
)
def test_a_zone_of_one_country_names_it(zone, country):
    assert country_of_timezone(zone) == country


@pytest.mark.parametrize("zone", ["UTC", "Etc/UTC", "Etc/GMT+5", "GMT", "EST", "CET", "Factory"])
def test_a_zone_of_no_country_names_none(zone):
    assert country_of_timezone(zone) is None


@pytest.mark.parametrize("alias", ["Israel", "Iceland", "US/Eastern"])
def test_an_alias_names_no_country_because_links_join_clocks_not_places(alias):
    # "Iceland" links to Africa/Abidjan since 2022: following links would put Reykjavik in Côte d'Ivoire.
    assert country_of_timezone(alias) is None


@pytest.mark.parametrize("name", [None, "", "Mars/Olympus_Mons", "asia/jerusalem"])
def test_an_unknown_name_names_no_country(name):
    assert country_of_timezone(name) is None


def test_every_country_the_table_names_is_an_iso_alpha_2_code():
    countries = set(timezones._zone_countries().values())
    assert len(countries) > 200
    assert all(len(code) == 2 and code.isalpha() and code.isupper() for code in countries)


@pytest.mark.parametrize("name", ["Asia/Jerusalem", "UTC", "Etc/GMT+5", "America/Argentina/Buenos_Aires", "Israel"])
def test_iana_names_are_timezones(name):
    assert is_iana_timezone(name)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "Mars/Olympus_Mons",
        "asia/jerusalem",
        "../../etc/passwd",
        "/etc/localtime",
        "posixrules",
        "localtime",
        "Factory",
        "zone.tab",
        "Asia/Jerusalem ",
        "A" * 65,
    ],
)
def test_other_names_are_not(name):
    assert not is_iana_timezone(name)
