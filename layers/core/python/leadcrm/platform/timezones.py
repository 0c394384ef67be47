"""The IANA time zone database as tables: which names are zones, and which country a zone is in.

Read from the `tzdata` package (a runtime dependency, so Lambda has it whatever its image holds) or, where it
is not installed, from the system's zoneinfo directories (`zoneinfo.TZPATH`): the same files either way.

- `zone.tab`: one row per zone and the one country it serves ("Europe/Berlin" is DE);
- `zone1970.tab`: zones shared by several countries since 1970 ("Europe/Berlin" is DE, DK, NO, SE, SJ);
  only a zone it gives exactly one country adds to zone.tab.

A name in neither (UTC, Etc/GMT+5, EST, and the old aliases such as "Israel") names no country. Aliases are
not followed on purpose: since 2022 a link joins zones that share a clock, not a place ("Iceland" links to
Africa/Abidjan, in Côte d'Ivoire).

Read once per process and cached; nothing here is a hand-written map.
"""

from __future__ import annotations

import importlib.resources
import re
import zoneinfo
from collections.abc import Iterator
from functools import cache
from pathlib import Path

MAX_TIMEZONE_LENGTH = 64
# A zone name as the database spells them ("America/Argentina/Buenos_Aires", "Etc/GMT+5", "UTC").
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*")
# Names in the zoneinfo directory that are files of the installation, not zones.
_NOT_ZONES = frozenset({"Factory", "localtime", "posixrules"})


def is_iana_timezone(name: str) -> bool:
    """Whether `name` is a zone of the IANA database ("Asia/Jerusalem", "UTC"), exactly as spelled."""
    if len(name) > MAX_TIMEZONE_LENGTH or not _ZONE_NAME.fullmatch(name) or name in _NOT_ZONES:
        return False
    return name in _available_timezones()


def country_of_timezone(name: str | None) -> str | None:
    """The ISO 3166-1 alpha-2 country of a zone ("Asia/Jerusalem" -> "IL"); None for a name of no single
    country ("UTC", "Etc/GMT+5", an alias such as "Israel") and for a name the database does not know."""
    if not name:
        return None
    return _zone_countries().get(name)


@cache
def _available_timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


@cache
def _zone_countries() -> dict[str, str]:
    """Zone -> its one country: zone.tab, then zone1970.tab's single-country rows."""
    countries: dict[str, str] = {}
    for codes, zone in _rows("zone1970.tab"):
        if "," not in codes:
            countries[zone] = codes
    for code, zone in _rows("zone.tab"):
        countries[zone] = code
    return countries


def _rows(table: str) -> Iterator[tuple[str, str]]:
    """(country codes, zone) of each row of a zone table (tab-separated; # starts a comment line)."""
    for line in _lines(table):
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) >= 3:
            yield fields[0].strip(), fields[2].strip()


def _lines(table: str) -> list[str]:
    text = _read_table(table)
    return text.splitlines() if text is not None else []


def _read_table(table: str) -> str | None:
    try:
        resource = importlib.resources.files("tzdata").joinpath("zoneinfo", table)
        return resource.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    for directory in zoneinfo.TZPATH:
        path = Path(directory) / table
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None
