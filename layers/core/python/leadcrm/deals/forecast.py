"""The deal forecast (staff): per period and owner, in each currency, one set-based statement.

For every (period, currency, owner) — and the all-owners total of each (period, currency), from the same
statement's GROUPING SETS — it sums:

- open deals by their forecast category (pipeline, best case, commit: the deal's own category, else its
  stage's), with the weighted pipeline Σ value × probability (the deal's own probability, else its stage's)
  rounded once to a minor unit;
- stalled deals apart (on hold: neither in a category nor weighted);
- closed-won actuals and closed-lost by the organization-local day they closed, the closed category (both),
  the win rate (won ÷ closed, by count) and the average cycle time of won deals (created → closed, days).

Open deals fall in the period of their expected close date, closed ones in the period they closed in.
Amounts of different currencies are never added: the currency is part of every group.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Connection, select, text

from leadcrm.deals.rules.forecast import Period, win_rate, window
from leadcrm.directory.tables import organizations
from leadcrm.platform import clock
from leadcrm.platform.assignee import Assignee

_FORECAST_SQL = """
WITH scoped AS (
    SELECT d.owner_user_id,
           d.currency,
           d.status,
           d.value_minor,
           coalesce(d.probability, s.probability) AS probability,
           coalesce(d.forecast_category, s.forecast_category) AS category,
           d.created_at,
           d.closed_at,
           CASE WHEN d.status IN ('won', 'lost')
                THEN date_trunc(:unit, d.closed_at AT TIME ZONE :tz)::date
                ELSE date_trunc(:unit, d.expected_close_date)::date
           END AS period_start
    FROM deals d
    JOIN deal_stages s ON s.id = d.stage_id AND s.organization_id = d.organization_id
    WHERE d.organization_id = CAST(:org AS uuid)
      AND (CAST(:owner AS uuid) IS NULL OR d.owner_user_id = CAST(:owner AS uuid))
      AND (NOT CAST(:unowned AS boolean) OR d.owner_user_id IS NULL)
      AND (
            (d.status IN ('open', 'stalled') AND d.expected_close_date >= :start AND d.expected_close_date < :end)
         OR (d.status IN ('won', 'lost')
             AND d.closed_at >= (CAST(:start AS timestamp) AT TIME ZONE :tz)
             AND d.closed_at < (CAST(:end AS timestamp) AT TIME ZONE :tz))
      )
)
SELECT period_start,
       currency,
       owner_user_id,
       GROUPING(owner_user_id) = 1 AS all_owners,
       count(*) FILTER (WHERE status = 'open' AND category = 'pipeline') AS pipeline_count,
       coalesce(sum(value_minor) FILTER (WHERE status = 'open' AND category = 'pipeline'), 0) AS pipeline_value,
       count(*) FILTER (WHERE status = 'open' AND category = 'best_case') AS best_case_count,
       coalesce(sum(value_minor) FILTER (WHERE status = 'open' AND category = 'best_case'), 0) AS best_case_value,
       count(*) FILTER (WHERE status = 'open' AND category = 'commit') AS commit_count,
       coalesce(sum(value_minor) FILTER (WHERE status = 'open' AND category = 'commit'), 0) AS commit_value,
       count(*) FILTER (WHERE status = 'stalled') AS stalled_count,
       coalesce(sum(value_minor) FILTER (WHERE status = 'stalled'), 0) AS stalled_value,
       round(coalesce(sum(value_minor::numeric * probability) FILTER (WHERE status = 'open'), 0) / 100)::bigint
           AS weighted_value,
       count(*) FILTER (WHERE status = 'won') AS won_count,
       coalesce(sum(value_minor) FILTER (WHERE status = 'won'), 0) AS won_value,
       count(*) FILTER (WHERE status = 'lost') AS lost_count,
       coalesce(sum(value_minor) FILTER (WHERE status = 'lost'), 0) AS lost_value,
       round((avg(extract(epoch FROM closed_at - created_at)) FILTER (WHERE status = 'won') / 86400)::numeric, 1)
           AS average_cycle_days
FROM scoped
GROUP BY GROUPING SETS ((period_start, currency, owner_user_id), (period_start, currency))
ORDER BY period_start, currency, all_owners DESC, owner_user_id NULLS FIRST
"""


@dataclass(frozen=True)
class ForecastQuery:
    interval: Period = Period.MONTH
    first: date | None = None
    last: date | None = None
    # One assignee's (owner's) deals, or (user_id None) the deals nobody owns; None: everyone's.
    assignee: Assignee | None = None


def forecast(
    conn: Connection, organization_id: uuid.UUID, query: ForecastQuery, *, now: datetime | None = None
) -> dict[str, Any]:
    """The forecast document: the window, the organization's timezone, and one row per group (two statements:
    the organization's timezone, then the rollup)."""
    timezone = conn.execute(select(organizations.c.timezone).where(organizations.c.id == organization_id)).scalar_one()
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        timezone, zone = "UTC", ZoneInfo("UTC")
    today = (now or clock.now()).astimezone(zone).date()
    start, end = window(today, query.interval, query.first, query.last)
    owner = query.assignee.user_id if query.assignee is not None else None
    rows = conn.execute(
        text(_FORECAST_SQL),
        {
            "unit": query.interval.value,
            "tz": timezone,
            "org": str(organization_id),
            "owner": str(owner) if owner else None,
            "unowned": query.assignee is not None and query.assignee.is_unassigned,
            "start": start,
            "end": end,
        },
    ).mappings()
    return {
        "interval": query.interval.value,
        "timezone": timezone,
        "start": start,
        "end": end,
        "rows": [_row(r) for r in rows],
    }


def _row(row: Any) -> dict[str, Any]:
    won, lost = row["won_count"], row["lost_count"]
    cycle = row["average_cycle_days"]
    return {
        "period_start": row["period_start"],
        "currency": row["currency"],
        "assignee_user_id": None if row["all_owners"] else row["owner_user_id"],
        "all_assignees": row["all_owners"],
        "pipeline": {"count": row["pipeline_count"], "value_minor": row["pipeline_value"]},
        "best_case": {"count": row["best_case_count"], "value_minor": row["best_case_value"]},
        "commit": {"count": row["commit_count"], "value_minor": row["commit_value"]},
        "closed": {"count": won + lost, "value_minor": row["won_value"] + row["lost_value"]},
        "stalled": {"count": row["stalled_count"], "value_minor": row["stalled_value"]},
        "weighted_pipeline_minor": row["weighted_value"],
        "closed_won": {"count": won, "value_minor": row["won_value"]},
        "closed_lost": {"count": lost, "value_minor": row["lost_value"]},
        "win_rate": win_rate(won, lost),
        "average_cycle_days": float(cycle) if cycle is not None else None,
    }
