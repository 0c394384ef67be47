"""When a failed delivery is tried again: exponential backoff with jitter, for up to a day.

Attempt n (1-based) failed: the next waits BASE * 2^(n-1), at most CAP, scaled by a jitter factor in
[0.5, 1] (so retries from many endpoints that failed together spread out, and every delay still grows:
30 s, 1 min, 2 min ... 6 h). Past GIVE_UP_AFTER from the first attempt the delivery fails for good, and the
endpoint is disabled (it kept failing for a day).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

BASE = timedelta(seconds=30)
CAP = timedelta(hours=6)
GIVE_UP_AFTER = timedelta(days=1)
JITTER_LOW = 0.5


def retry_delay(failed_attempt: int, jitter: float | None = None) -> timedelta:
    """The wait after the `failed_attempt`-th attempt failed; `jitter` in [0, 1] (random when None)."""
    raw = min(BASE * (2 ** max(failed_attempt - 1, 0)), CAP)
    share = random.random() if jitter is None else jitter  # noqa: S311 - spreading retries, not security
    return raw * (JITTER_LOW + (1 - JITTER_LOW) * share)


def next_attempt_at(
    first_attempt_at: datetime, now: datetime, failed_attempt: int, jitter: float | None = None
) -> datetime | None:
    """When to try again, or None: the day is over, give up."""
    due = now + retry_delay(failed_attempt, jitter)
    return None if due > first_attempt_at + GIVE_UP_AFTER else due
