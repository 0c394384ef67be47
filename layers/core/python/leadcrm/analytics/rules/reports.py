"""Rules of the lead analytics (G5), the funnel and the response metrics: pure, no I/O.

What each figure counts (lead-intake-principles "Choose timestamps carefully"):

- Every figure is over the organization's leads *created* in the period (`leads.created_at`, the instant the
  enquiry was received), test enquiries (`leads.is_test`) left out of all of them; archived leads count
  (archived is a flag, not an outcome).
- A period is a range of the organization's local days, both ends included: `from` starts at local midnight
  of its day, `to` ends at local midnight after its day (23 or 25 hours on a daylight-saving day).
- "This month" starts at local midnight of the 1st in the organization's timezone.
- Wins are leads whose status is converted or customer (a course purchase counts as a win); the conversion
  rate is wins / total as a whole percent, halves rounded up (0 when there are no leads).
- First human response = `leads.first_human_response_at − created_at`: only a touch a staff member logged
  sets it (work.touches), never an automatic acknowledgement, an auto-task or a system event.
- The funnel counts a lead at every step it reached at some time (its status history), so a lead that
  went straight from new to customer counts as contacted and trial too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

# A period is the API's one convention (platform.periods); re-exported for this capability's callers.
from leadcrm.platform.periods import Period, local_midnight, period_of  # noqa: F401
from leadcrm.work.rules.attention import org_zone

WON_STATUSES: tuple[str, ...] = ("converted", "customer")
DEFAULT_ATTRIBUTION_WINDOW = timedelta(days=90)
ATTRIBUTION_WINDOW_ENV = "ATTRIBUTION_WINDOW_DAYS"
MAX_ATTRIBUTION_WINDOW_DAYS = 730


def conversion_percent(wins: int, total: int) -> int:
    """wins / total as a whole percent, halves rounded up (as the dashboard's Math.round); 0 of 0 is 0."""
    if total <= 0:
        return 0
    return (200 * wins + total) // (2 * total)


# -- periods in the organization's timezone ---------------------------------------------------------------


def month_start(now: datetime, timezone: str | None) -> datetime:
    """The instant this month began in the organization's timezone (local midnight of the 1st)."""
    zone = org_zone(timezone)
    return local_midnight(now.astimezone(zone).date().replace(day=1), zone)


# -- the funnel --------------------------------------------------------------------------------------------


class FunnelStep(StrEnum):
    NEW = "new"
    CONTACTED = "contacted"
    TRIAL = "trial"
    WON = "won"


# How far along a status is; lost and frozen are no progress (a lead lost after a trial reached the trial).
FUNNEL_RANK: dict[str, int] = {
    "new": 0,
    "contacted": 1,
    "callback": 1,
    "trial_booked": 2,
    "no_show": 2,
    "converted": 3,
    "customer": 3,
    "lost": 0,
    "frozen": 0,
}
FUNNEL_STEPS: tuple[FunnelStep, ...] = tuple(FunnelStep)


@dataclass(frozen=True)
class FunnelRow:
    step: FunnelStep
    reached: int
    # Of the leads that reached the previous step, the share that reached this one (whole percent);
    # None for the first step.
    conversion_from_previous: int | None


def funnel(reached_by_rank: dict[int, int]) -> list[FunnelRow]:
    """`reached_by_rank`: how many leads' furthest step is each rank → the steps with cumulative counts."""
    rows: list[FunnelRow] = []
    previous: int | None = None
    for rank, step in enumerate(FUNNEL_STEPS):
        reached = sum(count for r, count in reached_by_rank.items() if r >= rank)
        rows.append(FunnelRow(step, reached, None if previous is None else conversion_percent(reached, previous)))
        previous = reached
    return rows


# -- attribution window ------------------------------------------------------------------------------------


def attribution_window(environ: dict[str, str] | None = None) -> timedelta:
    """How long after its first touch a lead may become a customer and still count as acquired by it:
    ATTRIBUTION_WINDOW_DAYS (1–730), else 90 days."""
    raw = (environ if environ is not None else os.environ).get(ATTRIBUTION_WINDOW_ENV, "").strip()
    try:
        days = int(raw)
    except ValueError:
        return DEFAULT_ATTRIBUTION_WINDOW
    return timedelta(days=days) if 0 < days <= MAX_ATTRIBUTION_WINDOW_DAYS else DEFAULT_ATTRIBUTION_WINDOW
