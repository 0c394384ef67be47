"""The one clock product code reads: `now()` is the current instant, aware and in UTC.

In Lambda it is the real time and nothing ever moves it. The local stack (`/_local/clock`) shifts it so that
what depends on time (SLA breaches, auto-close, deal rotting, nurture re-evaluation, digests, follow-up due
times, rate windows) can be played forward without waiting. The shift is an offset from the real time, so a
clock that was advanced or set keeps running from there, as a real clock would.

The offset is module state guarded by a lock: the local stack runs every function in its one process, and
each Lambda container has its own copy (always zero). SQL reads the same instant through
`leadcrm.platform.db.now.sql_now()`: a statement's `now()` would read PostgreSQL's clock, which no one moves.

What stays on real time on purpose: JWT validation (a token's `exp`/`nbf` are the issuer's real time) and
AWS request signing (SigV4 refuses a skewed clock); neither reads this module.
"""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta

_lock = threading.Lock()
_offset = timedelta(0)

# The largest shift the local stack takes: far enough for any retention window, near enough that an instant
# stays inside the bounds every field keeps (1900–2999).
MAX_OFFSET = timedelta(days=365 * 100)

# ISO 8601 durations as people write them for a clock: days and time parts (P3D, PT72H, P1DT2H30M, PT0.5S),
# weeks (P2W), a leading minus for going back. Years and months are refused: they have no fixed length.
_DURATION = re.compile(
    r"(?P<sign>-)?P(?!$)(?:(?P<weeks>\d{1,12})W)?(?:(?P<days>\d{1,12})D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d{1,12})H)?(?:(?P<minutes>\d{1,12})M)?(?:(?P<seconds>\d{1,12}(?:\.\d{1,6})?)S)?)?"
)


def real_now() -> datetime:
    """The real time, whatever the local stack did: only for what AWS checks against its own clock (when a
    presigned URL expires); product behaviour reads `now()`."""
    return datetime.now(UTC)


def now() -> datetime:
    """The current instant (aware, UTC): the real time plus the local stack's shift, if any."""
    with _lock:
        offset = _offset
    return real_now() + offset


def offset() -> timedelta:
    """How far the clock is from the real time (zero unless the local stack moved it)."""
    with _lock:
        return _offset


def _shift_to(new_offset: timedelta) -> datetime:
    global _offset
    if abs(new_offset) > MAX_OFFSET:
        raise ValueError(f"the clock may move at most {MAX_OFFSET.days} days from the real time")
    _offset = new_offset
    return real_now() + new_offset


def advance(delta: timedelta) -> datetime:
    """Moves the clock by `delta` (negative goes back); answers the new instant."""
    with _lock:
        return _shift_to(_offset + delta)


def set(instant: datetime) -> datetime:  # noqa: A001 - the local stack's verb, read as clock.set(...)
    """Puts the clock at `instant` (aware); it keeps running from there. Answers the new instant."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError("the instant must carry its UTC offset")
    with _lock:
        return _shift_to(instant.astimezone(UTC) - real_now())


def reset() -> datetime:
    """Back to the real time."""
    global _offset
    with _lock:
        _offset = timedelta(0)
    return real_now()


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration in weeks, days, hours, minutes and seconds (`PT72H`, `P3D`, `-P1DT12H`).

    Raises ValueError on anything else, including years and months (a month has no fixed length)."""
    if not isinstance(text, str) or len(text) > 64:
        raise ValueError("a duration is ISO 8601 text such as PT72H or P3D")
    found = _DURATION.fullmatch(text.strip().upper())
    if found is None:
        raise ValueError(f"{text!r} is not an ISO 8601 duration in weeks, days, hours, minutes or seconds")
    parts = found.groupdict()
    try:
        delta = timedelta(
            weeks=int(parts["weeks"] or 0),
            days=int(parts["days"] or 0),
            hours=int(parts["hours"] or 0),
            minutes=int(parts["minutes"] or 0),
            seconds=float(parts["seconds"] or 0),
        )
    except OverflowError:
        raise ValueError(f"{text!r} is longer than any clock can move") from None
    return -delta if parts["sign"] else delta
