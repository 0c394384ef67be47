"""Lead analytics (G5), the funnel with time in each stage, and response times (rules: analytics.rules).

Every figure is one set-based statement over the organization's real leads created in the period, read
through `ix_leads_org_created_at_analytics` (organization_id, created_at, covering the columns the figures
need, test leads left out by the index's own condition), and for the funnel and stages through the status
history's (organization_id, lead_id, …) index. The organization's timezone is read first: months and
periods are its local days.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Float,
    Integer,
    Select,
    and_,
    case,
    cast,
    extract,
    func,
    literal,
    literal_column,
    not_,
    select,
    text,
)

from leadcrm.analytics.rollup_queue import fold_pending
from leadcrm.analytics.rollups import build_funnel_rollup_query, local_days
from leadcrm.analytics.rules.reports import (
    FUNNEL_RANK,
    WON_STATUSES,
    FunnelRow,
    Period,
    conversion_percent,
    funnel,
    month_start,
)
from leadcrm.directory.tables import organizations
from leadcrm.leads.tables import lead_campaigns, lead_status_events, leads
from leadcrm.pipelines.tables import pipeline_stages
from leadcrm.work.rules.attention import org_zone

NO_CAMPAIGN_LABEL = "No campaign"

# "The caller did not say": the timezone is read (None is a real answer: the organization has none).
UNKNOWN_ZONE = object()


def organization_timezone(conn: Connection, organization_id: uuid.UUID) -> str | None:
    return conn.execute(
        select(organizations.c.timezone).where(organizations.c.id == organization_id)
    ).scalar_one_or_none()


def real_leads(organization_id: uuid.UUID, period: Period) -> list[Any]:
    """The conditions of every figure (and of analytics.attribution's report): this organization's leads
    created in the period, test enquiries out. `NOT is_test` is written as the analytics index's condition
    is, so PostgreSQL can prove the index applies."""
    conditions = [leads.c.organization_id == organization_id, not_(leads.c.is_test)]
    if period.starts_at is not None:
        conditions.append(leads.c.created_at >= period.starts_at)
    if period.ends_at is not None:
        conditions.append(leads.c.created_at < period.ends_at)
    return conditions


# -- G5 ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    key: str | None
    total: int
    wins: int


@dataclass(frozen=True)
class CampaignCount:
    campaign_id: uuid.UUID | None
    name: str
    total: int
    wins: int

    @property
    def win_rate(self) -> int:
        return conversion_percent(self.wins, self.total)


@dataclass(frozen=True)
class LeadAnalytics:
    total: int
    wins: int
    converted: int
    customers: int
    created_this_month: int
    month_starts_at: datetime
    by_source: list[Count]
    by_status: list[Count]
    by_campaign: list[CampaignCount]

    @property
    def conversion_rate(self) -> int:
        return conversion_percent(self.wins, self.total)


def build_analytics_query(organization_id: uuid.UUID, period: Period, this_month: datetime) -> Select:
    """One pass over the period's leads, grouped four ways at once (everything, source, status, campaign),
    the campaign rows named by a join on the few groups."""
    won = leads.c.status.in_(WON_STATUSES)
    grouped = (
        select(
            func.grouping(leads.c.source, leads.c.status, leads.c.campaign_id).label("grouped_by"),
            leads.c.source,
            leads.c.status,
            leads.c.campaign_id,
            func.count().label("total"),
            func.count().filter(won).label("wins"),
            func.count().filter(leads.c.status == "converted").label("converted"),
            func.count().filter(leads.c.status == "customer").label("customers"),
            func.count().filter(leads.c.created_at >= this_month).label("this_month"),
        )
        .where(*real_leads(organization_id, period))
        .group_by(func.grouping_sets(text("()"), leads.c.source, leads.c.status, leads.c.campaign_id))
        .cte("grouped")
    )
    return select(grouped, lead_campaigns.c.name.label("campaign_name")).select_from(
        grouped.outerjoin(
            lead_campaigns,
            and_(lead_campaigns.c.organization_id == organization_id, lead_campaigns.c.id == grouped.c.campaign_id),
        )
    )


# GROUPING(source, status, campaign_id): a bit set for each column the row is NOT grouped by.
_ALL, _BY_SOURCE, _BY_STATUS, _BY_CAMPAIGN = 0b111, 0b011, 0b101, 0b110


def lead_analytics(
    conn: Connection, organization_id: uuid.UUID, period: Period, *, now: datetime, timezone: str | None
) -> LeadAnalytics:
    this_month = month_start(now, timezone)
    totals: dict[str, int] = {"total": 0, "wins": 0, "converted": 0, "customers": 0, "this_month": 0}
    by_source: list[Count] = []
    by_status: list[Count] = []
    by_campaign: list[CampaignCount] = []
    for row in conn.execute(build_analytics_query(organization_id, period, this_month)).mappings():
        if row["grouped_by"] == _ALL:
            totals = {name: row[name] for name in totals}
        elif row["grouped_by"] == _BY_SOURCE:
            by_source.append(Count(row["source"], row["total"], row["wins"]))
        elif row["grouped_by"] == _BY_STATUS:
            by_status.append(Count(row["status"], row["total"], row["wins"]))
        elif row["grouped_by"] == _BY_CAMPAIGN:
            name = row["campaign_name"] if row["campaign_id"] is not None else NO_CAMPAIGN_LABEL
            by_campaign.append(CampaignCount(row["campaign_id"], name or "", row["total"], row["wins"]))
    by_source.sort(key=lambda c: (-c.total, c.key or ""))
    by_status.sort(key=lambda c: (-c.total, c.key or ""))
    by_campaign.sort(key=lambda c: (-c.total, c.campaign_id is None, c.name, str(c.campaign_id)))
    return LeadAnalytics(
        total=totals["total"],
        wins=totals["wins"],
        converted=totals["converted"],
        customers=totals["customers"],
        created_this_month=totals["this_month"],
        month_starts_at=this_month,
        by_source=by_source,
        by_status=by_status,
        by_campaign=by_campaign,
    )


# -- the funnel and time in each stage -----------------------------------------------------------------------


def _rank_of(status_column: Any) -> Any:
    return case(*((status_column == status, rank) for status, rank in FUNNEL_RANK.items()), else_=0)


@dataclass(frozen=True)
class StageTime:
    stage_id: uuid.UUID
    name: str
    category: str
    pipeline_id: uuid.UUID
    completed_stays: int  # stays in the stage that ended (the lead moved on)
    current: int  # leads in the stage now (a stay that has not ended: left out of the time)
    average_seconds: float | None


# GROUPING(stage_id, furthest) of the funnel statement's two grouping sets.
_BY_STAGE, _BY_FURTHEST = 0b01, 0b10


def build_funnel_query(organization_id: uuid.UUID, period: Period) -> Select:
    """The funnel and the time in each stage in ONE pass over the status history of the period's leads
    (lead_status_events records every stage change of the primary pipeline, creation included, so every
    lead has at least one event):

    - each event is a stay in its stage, ended by the lead's next event (`lead()` over the lead's events);
    - the running maximum of the funnel rank over the lead's events is, on its last event, the furthest
      step the lead reached;
    grouped twice at once: by stage (stays ended, leads there now, average stay) and by furthest rank
    (counted on each lead's last event only: one row per lead).

    Without a period the events are read in the index's order (organization, lead, time, id), which is the
    window's order, and the few test leads are left out by a hashed filter that keeps that order: no sort of
    the organization's whole history. A period selects its leads first (a join; the sort is of those only)."""
    e = lead_status_events
    if period.starts_at is None and period.ends_at is None:
        test_leads = select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.is_test)
        in_scope = e.c.lead_id.not_in(test_leads)
    else:
        in_scope = e.c.lead_id.in_(select(leads.c.id).where(*real_leads(organization_id, period)))
    by_lead = {"partition_by": e.c.lead_id, "order_by": (e.c.changed_at, e.c.id)}
    events = (
        select(
            e.c.to_stage_id.label("stage_id"),
            e.c.changed_at.label("entered_at"),
            func.lead(e.c.changed_at).over(**by_lead).label("left_at"),
            func.max(_rank_of(e.c.to_status)).over(**by_lead).label("furthest"),
        )
        .where(e.c.organization_id == organization_id, in_scope)
        .subquery("events")
    )
    seconds = extract("epoch", events.c.left_at - events.c.entered_at)
    return select(
        cast(func.grouping(events.c.stage_id, events.c.furthest), Integer).label("grouped_by"),
        events.c.stage_id,
        events.c.furthest,
        func.count().filter(events.c.left_at.is_(None)).label("current"),
        func.count(events.c.left_at).label("completed"),
        cast(func.avg(seconds), Float).label("average"),
    ).group_by(func.grouping_sets(events.c.stage_id, events.c.furthest))


@dataclass(frozen=True)
class Funnel:
    total: int
    steps: list[FunnelRow]
    stages: list[StageTime]


def lead_funnel(
    conn: Connection, organization_id: uuid.UUID, period: Period, *, timezone: str | None | object = UNKNOWN_ZONE
) -> Funnel:
    """From the rollups (O(days), analytics.rollups) when the period is whole local days of the organization,
    as every API period is; any other period from the status history. `timezone`: the organization's, when
    the caller has read it already."""
    if timezone is UNKNOWN_ZONE:
        timezone = organization_timezone(conn, organization_id)
    days = local_days(period, timezone if isinstance(timezone, str) else None)
    reached: dict[int, int] = {}
    stays: dict[uuid.UUID, Any] = {}
    if days is not None:
        fold_pending(conn, organization_id)  # what was written before this report, in the rollups it reads
        for row in conn.execute(build_funnel_rollup_query(organization_id, days)).mappings():
            if row["row_kind"] == "reached":
                reached[int(row["furthest"])] = int(row["current"])
                continue
            completed = int(row["completed"])
            stays[row["stage_id"]] = {
                "completed": completed,
                "current": int(row["current"]),
                "average": float(row["seconds"] / completed) if completed else None,
            }
        return Funnel(
            total=sum(reached.values()), steps=funnel(reached), stages=_stage_times(conn, organization_id, stays)
        )
    for row in conn.execute(build_funnel_query(organization_id, period)).mappings():
        if row["grouped_by"] == _BY_FURTHEST and row["current"]:
            reached[int(row["furthest"])] = row["current"]
        elif row["grouped_by"] == _BY_STAGE and row["stage_id"] is not None:
            stays[row["stage_id"]] = row
    return Funnel(total=sum(reached.values()), steps=funnel(reached), stages=_stage_times(conn, organization_id, stays))


def _stage_times(conn: Connection, organization_id: uuid.UUID, stays: dict[uuid.UUID, Any]) -> list[StageTime]:
    """The stages' names, in pipeline order (one small lookup of the stages the history names)."""
    if not stays:
        return []
    s = pipeline_stages
    stages = conn.execute(
        select(s.c.id, s.c.name, s.c.category, s.c.pipeline_id)
        .where(s.c.organization_id == organization_id, s.c.id.in_(list(stays)))
        .order_by(s.c.pipeline_id, s.c.position, s.c.id)
    ).all()
    return [
        StageTime(
            stage_id=stage.id,
            name=stage.name,
            category=stage.category,
            pipeline_id=stage.pipeline_id,
            completed_stays=stays[stage.id]["completed"],
            current=stays[stage.id]["current"],
            average_seconds=_seconds(stays[stage.id]["average"]),
        )
        for stage in stages
    ]


def _seconds(value: Any) -> float | None:
    return None if value is None else round(float(value), 1)


# -- first human response --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResponseTimes:
    month: str | None  # "2026-03" in the organization's timezone; None for the whole period
    leads: int
    responded: int
    median_seconds: float | None
    p90_seconds: float | None


def build_response_times_query(organization_id: uuid.UUID, period: Period, timezone: str) -> Select:
    """Median and 90th percentile of (first human response − creation), for the whole period and for each
    of its months in the organization's timezone (leads nobody answered yet are counted, not timed)."""
    # The month is computed once in a subquery: GROUPING SETS must name the very expression it groups by.
    per_lead = (
        select(
            func.to_char(func.timezone(literal(timezone), leads.c.created_at), "YYYY-MM").label("month"),
            extract("epoch", leads.c.first_human_response_at - leads.c.created_at).label("seconds"),
        )
        .where(*real_leads(organization_id, period))
        .subquery("per_lead")
    )
    return (
        select(
            cast(func.grouping(per_lead.c.month), Integer).label("grouped_by"),
            per_lead.c.month,
            func.count().label("leads"),
            func.count(per_lead.c.seconds).label("responded"),
            cast(func.percentile_cont(0.5).within_group(per_lead.c.seconds), Float).label("median"),
            cast(func.percentile_cont(0.9).within_group(per_lead.c.seconds), Float).label("p90"),
        )
        .group_by(func.grouping_sets(text("()"), per_lead.c.month))
        .order_by(literal_column("grouped_by").desc(), per_lead.c.month)
    )


def response_times(
    conn: Connection, organization_id: uuid.UUID, period: Period, timezone: str | None
) -> tuple[ResponseTimes, list[ResponseTimes]]:
    """The whole period's figures, and each month's."""
    zone_name = getattr(org_zone(timezone), "key", "UTC")
    overall = ResponseTimes(None, 0, 0, None, None)
    months: list[ResponseTimes] = []
    for row in conn.execute(build_response_times_query(organization_id, period, zone_name)).mappings():
        figures = ResponseTimes(
            row["month"], row["leads"], row["responded"], _seconds(row["median"]), _seconds(row["p90"])
        )
        if row["grouped_by"] == 1:
            overall = figures
        else:
            months.append(figures)
    return overall, months
