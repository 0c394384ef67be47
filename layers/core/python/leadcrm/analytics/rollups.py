"""Reads of the analytics rollups (migration 0023): the funnel and the attribution cohort per local day.

The rollups are kept per organization, local day of the lead's creation (the organization's timezone) and a
slot (0..3, a hash of the lead id, so concurrent intake of one organization and day adds to four rows rather
than queueing on one); a read sums the slots. A period the rollups can answer is a range of whole local days;
any other (`local_days` answers None) is read from the source rows (analytics.reports, attribution_report).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    CompoundSelect,
    Numeric,
    Select,
    SmallInteger,
    Uuid,
    cast,
    func,
    literal,
    null,
    select,
    union_all,
)

from leadcrm.analytics.tables import (
    analytics_daily_acquired,
    analytics_daily_funnel,
    analytics_daily_stages,
    analytics_lead_facts,
)
from leadcrm.platform.periods import Period, local_midnight, zone_of


@dataclass(frozen=True)
class LocalDays:
    """[first, end) local days; None on a side means unbounded."""

    first: date | None
    end: date | None


def local_days(period: Period, timezone: str | None) -> LocalDays | None:
    """The local days a period spans, when both its ends are local midnights of the organization; else None."""
    zone = zone_of(timezone)
    bounds: list[date | None] = []
    for instant in (period.starts_at, period.ends_at):
        if instant is None:
            bounds.append(None)
            continue
        day = instant.astimezone(zone).date()
        if local_midnight(day, zone) != instant:
            return None
        bounds.append(day)
    return LocalDays(bounds[0], bounds[1])


def _in_days(table: Any, organization_id: uuid.UUID, days: LocalDays) -> list[Any]:
    conditions = [table.c.organization_id == organization_id]
    if days.first is not None:
        conditions.append(table.c.day >= days.first)
    if days.end is not None:
        conditions.append(table.c.day < days.end)
    return conditions


def build_funnel_rollup_query(organization_id: uuid.UUID, days: LocalDays) -> CompoundSelect:
    """One statement, O(days × (ranks + stages) × slots) rows read, two kinds of rows:

    - `reached` per furthest funnel rank: how many leads got that far and no further;
    - `stage` per stage: the stays that ended (count and seconds) and the leads there now."""
    f = analytics_daily_funnel
    s = analytics_daily_stages
    no_id = cast(null(), Uuid)
    reached = (
        select(
            literal("reached").label("row_kind"),
            f.c.furthest,
            no_id.label("stage_id"),
            func.sum(f.c.leads).label("current"),
            cast(null(), BigInteger).label("completed"),
            cast(null(), Numeric).label("seconds"),
        )
        .where(*_in_days(f, organization_id, days))
        .group_by(f.c.furthest)
        .having(func.sum(f.c.leads) > 0)
    )
    stages = (
        select(
            literal("stage"),
            cast(null(), SmallInteger),
            s.c.stage_id,
            func.sum(s.c.current),
            func.sum(s.c.completed),
            func.sum(s.c.seconds),
        )
        .where(*_in_days(s, organization_id, days))
        .group_by(s.c.stage_id)
        .having(func.sum(s.c.completed) + func.sum(s.c.current) > 0)
    )
    return union_all(reached, stages)


def build_acquired_query(organization_id: uuid.UUID, days: LocalDays) -> Select:
    """Leads acquired per first-touch campaign and channel: O(days × campaigns × channels × slots) rows."""
    a = analytics_daily_acquired
    return (
        select(a.c.campaign_id, a.c.channel, func.sum(a.c.leads).label("acquired"))
        .where(*_in_days(a, organization_id, days))
        .group_by(a.c.campaign_id, a.c.channel)
        .having(func.sum(a.c.leads) > 0)
    )


def build_customers_query(organization_id: uuid.UUID, days: LocalDays, window: timedelta) -> Select:
    """The cohort's customers: leads of the days that first won (a won status or a linked deal closed won,
    whichever came first) within `window` of their first touch. Read from the partial index of won facts."""
    f = analytics_lead_facts
    return select(f.c.lead_id, f.c.acquired_at, f.c.campaign_id, f.c.channel, f.c.won_at).where(
        *_in_days(f, organization_id, days),
        f.c.won_at.is_not(None),
        f.c.acquired_at.is_not(None),
        f.c.won_at <= f.c.acquired_at + window,
    )
