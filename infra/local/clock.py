"""`/_local/clock`: the local stack's controllable clock, to play time-dependent behaviour forward.

Every function runs in this process, so moving `leadcrm.platform.clock` here moves the time every handler,
job and statement reads (SQL gets it as a bound parameter, never the database's `now()`). The clock is an
offset from the real time: once advanced or set it keeps running. Tokens (the JWT authorizer), AWS request
signing and the stand-ins' own stamps (API Gateway's request time, SES's event times) stay on real time.

- `GET /_local/clock` → `{"data": {"now", "offsetSeconds"}}`
- `POST /_local/clock {"advance": "PT72H"}` (an ISO 8601 duration: weeks, days, hours, minutes, seconds;
  `-P1D` goes back) or `{"set": "2026-12-24T09:00:00Z"}` (an instant with its offset) → the same body
- `DELETE /_local/clock` → back to the real time
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from types import ModuleType
from typing import Any

Reply = tuple[int, dict[str, str], bytes]
MAX_INSTANT_LENGTH = 64


def _clock() -> ModuleType:
    # Imported when first used: the core layer is on the path only once the functions are loaded (lambdas.py).
    from leadcrm.platform import clock

    return clock


def _reply(status: int, body: dict[str, Any]) -> Reply:
    return status, {"content-type": "application/json"}, json.dumps(body).encode()


def _refused(message: str) -> Reply:
    return _reply(400, {"error": {"code": "VALIDATION_FAILED", "message": message}})


def _state() -> Reply:
    clock = _clock()
    offset_seconds = round(clock.offset().total_seconds())
    return _reply(200, {"data": {"now": clock.now().isoformat(), "offsetSeconds": offset_seconds}})


def show_clock(stack: object, data: dict[str, Any]) -> Reply:
    return _state()


def move_clock(stack: object, data: dict[str, Any]) -> Reply:
    """`{"advance": duration}` or `{"set": instant}`: exactly one of them."""
    unknown = sorted(set(data) - {"advance", "set"})
    if unknown:
        return _refused(f"Unknown field(s): {', '.join(unknown)}; send advance or set.")
    if len(data) != 1:
        return _refused('Send exactly one of {"advance": "PT72H"} or {"set": "2026-12-24T09:00:00Z"}.')
    clock = _clock()
    try:
        if "advance" in data:
            if not isinstance(data["advance"], str):
                return _refused("advance must be an ISO 8601 duration such as PT72H or P3D.")
            clock.advance(clock.parse_duration(data["advance"]))
        else:
            instant = _instant(data["set"])
            if instant is None:
                return _refused("set must be an ISO 8601 instant with its offset, such as 2026-12-24T09:00:00Z.")
            clock.set(instant)
    except ValueError as refused:  # an unreadable duration, or a move past the clock's reach
        return _refused(f"{'advance' if 'advance' in data else 'set'}: {refused}.")
    return _state()


def reset_clock(stack: object, data: dict[str, Any]) -> Reply:
    _clock().reset()
    return _state()


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) > MAX_INSTANT_LENGTH:
        return None
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        return None
    return instant if instant.utcoffset() is not None else None


CLOCK_ROUTES: dict[tuple[str, str], Callable[[Any, dict[str, Any]], Reply]] = {
    ("GET", "/_local/clock"): show_clock,
    ("POST", "/_local/clock"): move_clock,
    ("DELETE", "/_local/clock"): reset_clock,
}
