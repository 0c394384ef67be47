"""Helpdesk reports: first response and resolution times, and breach rates, per queue and per agent.

One statement (GROUPING SETS) gives the totals, every queue and every agent for the tickets created in the
period. Times are business time (what the SLA measures), taken when they happened: first response from
creation, resolution over the last cycle's running time. A ticket counts as breached when it missed any
target during its life (`breach_count`). Per agent means the accountable agent now (§8: a handover passes
the accountability, breaches included, to the new agent).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Integer, Numeric, cast, func, literal_column, select, text

from leadcrm.directory.tables import organizations
from leadcrm.platform.periods import Period, check_days, local_today, period_of
from leadcrm.tickets.tables import tickets

DEFAULT_REPORT_DAYS = 30
MAX_REPORT_DAYS = 366


@dataclass(frozen=True)
class ReportPeriod:
    """The local days a report covers (both included), the organization's timezone and their instants."""

    first: date
    last: date
    timezone: str | None
    instants: Period


def report_period(
    conn: Connection, organization_id: uuid.UUID, first: date | None, last: date | None, *, now: datetime
) -> ReportPeriod:
    """`from`/`to` as the API takes every period (leadcrm.platform.periods); a side not given: the
    DEFAULT_REPORT_DAYS days up to today, or from `from`. 400 INVALID_PERIOD when reversed or over
    MAX_REPORT_DAYS days."""
    timezone = conn.execute(
        select(organizations.c.timezone).where(organizations.c.id == organization_id)
    ).scalar_one_or_none()
    span = timedelta(days=DEFAULT_REPORT_DAYS - 1)
    if last is None:
        last = first + span if first is not None else local_today(now, timezone)
    if first is None:
        first = last - span
    check_days(first, last, max_days=MAX_REPORT_DAYS)
    return ReportPeriod(first=first, last=last, timezone=timezone, instants=period_of(first, last, timezone))


def sla_report(
    conn: Connection, organization_id: uuid.UUID, created_from: datetime, created_to: datetime
) -> dict[str, Any]:
    breached = func.count().filter(tickets.c.breach_count > 0)
    statement = (
        select(
            func.grouping(tickets.c.queue_id, tickets.c.assignee_user_id).label("grouping"),
            tickets.c.queue_id,
            tickets.c.assignee_user_id,
            func.count().label("tickets"),
            func.count(tickets.c.first_responded_at).label("responded"),
            cast(func.avg(tickets.c.first_response_seconds), Integer).label("first_response_avg_seconds"),
            cast(func.percentile_cont(0.5).within_group(tickets.c.first_response_seconds), Integer).label(
                "first_response_median_seconds"
            ),
            func.count(tickets.c.resolved_at).label("resolved"),
            cast(func.avg(tickets.c.resolution_seconds), Integer).label("resolution_avg_seconds"),
            cast(func.percentile_cont(0.5).within_group(tickets.c.resolution_seconds), Integer).label(
                "resolution_median_seconds"
            ),
            breached.label("breached"),
            func.round(cast(breached, Numeric) / func.nullif(func.count(), 0), 4).label("breach_rate"),
            func.count().filter(tickets.c.first_response_breached_at.is_not(None)).label("first_response_breached"),
            func.count().filter(tickets.c.status == "closed").label("closed"),
        )
        .where(
            tickets.c.organization_id == organization_id,
            tickets.c.created_at >= created_from,
            tickets.c.created_at < created_to,
        )
        .group_by(text("GROUPING SETS ((tickets.queue_id), (tickets.assignee_user_id), ())"))
        .order_by(literal_column("grouping"), tickets.c.queue_id, tickets.c.assignee_user_id)
    )
    totals: dict[str, Any] = _empty()
    by_queue: list[dict[str, Any]] = []
    by_agent: list[dict[str, Any]] = []
    for row in conn.execute(statement).mappings():
        figures = {k: row[k] for k in _FIGURES}
        figures["breach_rate"] = float(row["breach_rate"]) if row["breach_rate"] is not None else 0.0
        # grouping(queue_id, assignee_user_id): 1 = grouped by queue (assignee rolled up), 2 = by agent, 3 = total.
        if row["grouping"] == 3:
            totals = figures
        elif row["grouping"] == 1:
            by_queue.append({"queue_id": row["queue_id"], **figures})
        else:
            by_agent.append({"assignee_user_id": row["assignee_user_id"], **figures})
    return {"totals": totals, "by_queue": by_queue, "by_agent": by_agent}


_FIGURES = (
    "tickets",
    "responded",
    "first_response_avg_seconds",
    "first_response_median_seconds",
    "resolved",
    "resolution_avg_seconds",
    "resolution_median_seconds",
    "breached",
    "breach_rate",
    "first_response_breached",
    "closed",
)


def _empty() -> dict[str, Any]:
    figures: dict[str, Any] = {k: 0 for k in _FIGURES}
    for name in (
        "first_response_avg_seconds",
        "first_response_median_seconds",
        "resolution_avg_seconds",
        "resolution_median_seconds",
    ):
        figures[name] = None
    figures["breach_rate"] = 0.0
    return figures
