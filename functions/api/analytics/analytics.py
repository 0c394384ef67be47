"""Lead analytics (G5), funnel, response times and campaign attribution: `…/leads/analytics…` (issue 9).

Every route takes an optional period of the organization's local days (`from`, `to`, both included;
400 INVALID_PERIOD when from is after to) and leaves test enquiries out of every figure. Staff only.
Registered before `…/leads/{leadId}` (api.handler), so `analytics` is never read as a lead id.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.analytics.schemas_analytics import (
    AttributionReportOut,
    CampaignAttributionOut,
    CampaignCount,
    ChannelAttributionOut,
    CreditOut,
    FunnelOut,
    FunnelStepOut,
    LeadAnalyticsOut,
    PeriodOut,
    ResponseTimesOut,
    ResponseTimesRow,
    SourceCount,
    StageTimeOut,
    StatusCount,
)
from api.http import caller
from api.operations import Operations
from api.params import FromDay, ToDay
from api.schemas import Envelope
from leadcrm.analytics import reports as analytics
from leadcrm.analytics.attribution_report import attribution_report
from leadcrm.analytics.rules.reports import MAX_ATTRIBUTION_WINDOW_DAYS, Period, attribution_window, period_of
from leadcrm.directory.access import require_staff
from leadcrm.directory.rules import Actor
from leadcrm.platform import clock
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Analytics")

RESPONSE_COUNTED = (
    "leads.first_human_response_at - leads.created_at: the first touch a staff member logged on the lead "
    "(never an automatic acknowledgement, an auto-task or a system event); leads not yet answered are counted "
    "in `leads`, not timed"
)


def _scope(
    uow: UnitOfWork, org_id: str, from_day: date | None, to_day: date | None
) -> tuple[Actor, str | None, Period]:
    """The staff caller, the organization's timezone, and the period as instants (400 INVALID_PERIOD)."""
    actor = require_staff(caller(uow, router, org_id))
    timezone = analytics.organization_timezone(uow.connection, actor.organization_id)
    return actor, timezone, period_of(from_day, to_day, timezone)


def _period_out(period: Period, from_day: date | None, to_day: date | None, timezone: str | None) -> PeriodOut:
    return PeriodOut(
        from_=from_day, to=to_day, timezone=timezone or "UTC", starts_at=period.starts_at, ends_at=period.ends_at
    )


@ops.get(
    "/organizations/<orgId>/leads/analytics",
    "getLeadAnalytics",
    "Lead analytics (G5)",
    "Counts per status and source, conversions and follow-up figures over a period of organization-local days (G5).",
    errors={400: ["INVALID_PERIOD"]},
)
def overview(orgId: str, from_: FromDay = None, to: ToDay = None) -> Envelope[LeadAnalyticsOut]:
    with UnitOfWork() as uow:
        actor, timezone, period = _scope(uow, orgId, from_, to)
        figures = analytics.lead_analytics(
            uow.connection, actor.organization_id, period, now=clock.now(), timezone=timezone
        )
    return Envelope[LeadAnalyticsOut](
        data=LeadAnalyticsOut(
            period=_period_out(period, from_, to, timezone),
            total=figures.total,
            wins=figures.wins,
            converted=figures.converted,
            customers=figures.customers,
            conversion_rate=figures.conversion_rate,
            created_this_month=figures.created_this_month,
            month_starts_at=figures.month_starts_at,
            by_source=[SourceCount(source=c.key or "", total=c.total, wins=c.wins) for c in figures.by_source],
            by_status=[StatusCount(status=c.key or "", total=c.total) for c in figures.by_status],
            by_campaign=[
                CampaignCount(campaign_id=c.campaign_id, name=c.name, total=c.total, wins=c.wins, win_rate=c.win_rate)
                for c in figures.by_campaign
            ],
        )
    )


@ops.get(
    "/organizations/<orgId>/leads/analytics/funnel",
    "getLeadFunnel",
    "Funnel and time in each stage",
    "How many leads reached each stage of a pipeline over the period, and the time they spent in each.",
    errors={400: ["INVALID_PERIOD"]},
)
def funnel(orgId: str, from_: FromDay = None, to: ToDay = None) -> Envelope[FunnelOut]:
    with UnitOfWork() as uow:
        actor, timezone, period = _scope(uow, orgId, from_, to)
        result = analytics.lead_funnel(uow.connection, actor.organization_id, period, timezone=timezone)
        uow.commit()  # the rollup fold the report did (analytics.rollup_queue) is not done twice
    return Envelope[FunnelOut](
        data=FunnelOut(
            period=_period_out(period, from_, to, timezone),
            total=result.total,
            steps=[
                FunnelStepOut(step=s.step.value, reached=s.reached, conversion_from_previous=s.conversion_from_previous)
                for s in result.steps
            ],
            stages=[StageTimeOut.model_validate(s, from_attributes=True) for s in result.stages],
        )
    )


@ops.get(
    "/organizations/<orgId>/leads/analytics/response-times",
    "getLeadResponseTimes",
    "First human response: median and 90th percentile",
    "Median and 90th percentile of the first human response to a new lead, overall and per assignee.",
    errors={400: ["INVALID_PERIOD"]},
)
def response_times(orgId: str, from_: FromDay = None, to: ToDay = None) -> Envelope[ResponseTimesOut]:
    with UnitOfWork() as uow:
        actor, timezone, period = _scope(uow, orgId, from_, to)
        overall, months = analytics.response_times(uow.connection, actor.organization_id, period, timezone)
    return Envelope[ResponseTimesOut](
        data=ResponseTimesOut(
            period=_period_out(period, from_, to, timezone),
            counted=RESPONSE_COUNTED,
            leads=overall.leads,
            responded=overall.responded,
            median_seconds=overall.median_seconds,
            p90_seconds=overall.p90_seconds,
            by_month=[ResponseTimesRow.model_validate(m, from_attributes=True) for m in months],
        )
    )


@ops.get(
    "/organizations/<orgId>/leads/analytics/campaigns",
    "getCampaignAttribution",
    "Attribution per campaign: customers, spend, CAC, first/last/linear credit",
    (
        "Per campaign and channel: leads, customers, spend, cost per acquisition, and first-touch, last-touch and "
        "linear credit over the period."
    ),
    errors={400: ["INVALID_PERIOD"]},
)
def campaigns(
    orgId: str,
    from_: FromDay = None,
    to: ToDay = None,
    window_days: Annotated[
        int | None,
        Query(alias="windowDays", ge=1, le=MAX_ATTRIBUTION_WINDOW_DAYS, description="default ATTRIBUTION_WINDOW_DAYS"),
    ] = None,
) -> Envelope[AttributionReportOut]:
    window = timedelta(days=window_days) if window_days is not None else attribution_window()
    with UnitOfWork() as uow:
        actor, timezone, period = _scope(uow, orgId, from_, to)
        report = attribution_report(
            uow.connection, actor.organization_id, period, (from_, to), window, timezone=timezone
        )
        uow.commit()  # the rollup fold the report did (analytics.rollup_queue) is not done twice
    return Envelope[AttributionReportOut](
        data=AttributionReportOut(
            period=_period_out(period, from_, to, timezone),
            window_days=report.window_days,
            currency=report.currency,
            acquired=report.acquired,
            customers=report.customers,
            spend=report.spend,
            campaigns=[
                CampaignAttributionOut(
                    campaign_id=c.campaign_id,
                    name=c.name,
                    acquired=c.acquired,
                    customers=c.customers,
                    spend=c.spend,
                    cac=c.cac,
                    credit=CreditOut(first_touch=c.first_touch, last_touch=c.last_touch, linear=c.linear),
                )
                for c in report.campaigns
            ],
            channels=[ChannelAttributionOut.model_validate(c, from_attributes=True) for c in report.channels],
        )
    )
