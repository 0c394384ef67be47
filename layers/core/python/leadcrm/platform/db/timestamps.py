"""Fast text parsing of PostgreSQL dates and timestamps for pg8000.

pg8000 reads every result value as text and parses `timestamptz` with `datetime.strptime(…, "%z")`: about
20 µs a value, so a work-queue page of ~180 timestamps spent ~4 ms of Python in parsing alone (issue 22).
PostgreSQL's ISO output (`2026-12-02 06:20:43.5+00`, `+05:30`, LMT offsets such as `+05:53:28`, years
below 1000 written with four digits) is exactly what `datetime.fromisoformat` reads since Python 3.11, in
~0.3 µs.

What ISO parsing refuses is handed to pg8000's own converter, so those values come back as before:
`infinity` / `-infinity` (a string), years past 9999 (which `datetime` cannot hold: the string), any
non-ISO DateStyle. A BC value (a trailing " BC", which `fromisoformat` rejects) is the string, as pg8000
gives it for dates and timestamptz; for a plain timestamp pg8000's fallback (dateutil) would read it as the
same year AD, so it is answered here. One value now reads better than before: an offset with seconds
(`+05:53:28`, local mean time before ~1900), which pg8000 returned as the string, is a datetime.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pg8000 import converters

# PostgreSQL type OIDs (pg_type), as pg8000.converters names them.
DATE_OID = converters.DATE
TIMESTAMP_OID = converters.TIMESTAMP
TIMESTAMPTZ_OID = converters.TIMESTAMPTZ
BC = " BC"


def timestamptz_in(data: str) -> datetime | str:
    try:
        return datetime.fromisoformat(data)
    except ValueError:
        return converters.timestamptz_in(data)


def timestamp_in(data: str) -> datetime | str:
    try:
        return datetime.fromisoformat(data)
    except ValueError:
        if data.endswith(BC):
            return data
        return converters.timestamp_in(data)


def date_in(data: str) -> date | str:
    try:
        return date.fromisoformat(data)
    except ValueError:
        return converters.date_in(data)


FAST_IN_ADAPTERS = {TIMESTAMPTZ_OID: timestamptz_in, TIMESTAMP_OID: timestamp_in, DATE_OID: date_in}


def register_fast_parsers(dbapi_connection: Any, connection_record: Any = None) -> None:
    """The engine's `connect` hook: this connection parses dates and timestamps with the functions above."""
    for oid, parse in FAST_IN_ADAPTERS.items():
        dbapi_connection.register_in_adapter(oid, parse)
