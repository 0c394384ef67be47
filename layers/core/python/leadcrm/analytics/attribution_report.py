"""The attribution report: customers won in a period per campaign and per channel, with first-touch,
last-touch and linear credit over each customer's journey (analytics.rules.attribution), spend and cost per
customer. One statement reads the journeys; spend is prorated over the period."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from sqlalchemy import (
    CompoundSelect,
    Connection,
    DateTime,
    Integer,
    Subquery,
    Uuid,
    and_,
    cast,
    func,
    literal,
    literal_column,
    null,
    select,
    text,
    true,
    union_all,
)

from leadcrm.analytics.reports import UNKNOWN_ZONE, organization_timezone, real_leads
from leadcrm.analytics.rollup_queue import fold_pending
from leadcrm.analytics.rollups import LocalDays, build_acquired_query, build_customers_query, local_days
from leadcrm.analytics.rules.attribution import (
    Journey,
    TouchPoint,
    credit_by_campaign,
    customer_acquisition_cost,
    prorated_spend,
)
from leadcrm.analytics.rules.reports import WON_STATUSES, Period
from leadcrm.analytics.tables import campaign_spend
from leadcrm.deals.tables import deals
from leadcrm.leads.rules.touches import (
    DIRECT_UNKNOWN,
    DIRECT_UNKNOWN_LABEL,
)
from leadcrm.leads.tables import lead_campaigns, lead_status_events, lead_touches, leads
from leadcrm.platform.events import CONVERSATION_INBOUND_RECEIVED as CONVERSATION_INBOUND_RECEIVED

# A customer's path counts at most this many later touches (its oldest) besides the first.
MAX_PATH_TOUCHES = 500

NO_CAMPAIGN_LABEL = "No campaign"


@dataclass(frozen=True)
class CampaignAttribution:
    campaign_id: uuid.UUID | None  # None: leads and touches without a campaign hook
    name: str
    acquired: int  # leads whose first touch is this campaign's, in the period
    customers: int  # of those, the ones that won within the window (first-touch customers)
    spend: Decimal
    cac: Decimal | None
    first_touch: float
    last_touch: float
    linear: float


@dataclass(frozen=True)
class ChannelAttribution:
    channel: str  # the first touch's acquisition channel; direct_unknown: Direct / Unknown
    label: str
    acquired: int
    customers: int


@dataclass(frozen=True)
class AttributionReport:
    window_days: int
    currency: str | None
    acquired: int
    customers: int
    spend: Decimal
    campaigns: list[CampaignAttribution]
    channels: list[ChannelAttribution]


def build_journeys_query(organization_id: uuid.UUID, period: Period, window: timedelta) -> CompoundSelect:
    """One statement, two kinds of rows:

    - `acquired`: per first-touch campaign and channel, how many of the period's real leads it acquired (a lead's first
      touch is its creation, so "acquired in the period" is "created in the period");
    - `journey`: for every customer among them (won, the first time, within `window` of its first touch),
      its first touch, when it won, and each later touch up to the win (one row per touch; none: one row
      with no touch).

    Read from indexes alone: the period's leads (analytics index), their first touches (the unique first-touch
    index covers time, campaign and channel), first wins (the partial index of won events), the customers' paths."""
    e = lead_status_events
    cohort = (
        select(
            leads.c.id.label("lead_id"),
            lead_touches.c.occurred_at.label("acquired_at"),
            lead_touches.c.campaign_id,
            lead_touches.c.channel,
        )
        .select_from(
            leads.join(
                lead_touches,
                and_(
                    lead_touches.c.organization_id == organization_id,
                    lead_touches.c.lead_id == leads.c.id,
                    lead_touches.c.is_first,
                ),
            )
        )
        .where(*real_leads(organization_id, period))
        .cte("cohort")
    )
    # Written as the partial index's condition (literals), so PostgreSQL can prove the index applies. A lead
    # also wins when a deal linked to it closes won (spec crm-workflows section 7): the earliest win counts.
    status_wins = select(e.c.lead_id, e.c.changed_at.label("won_at")).where(
        e.c.organization_id == organization_id,
        e.c.to_status.in_([literal_column(f"'{status}'") for status in WON_STATUSES]),
        e.c.lead_id.in_(select(cohort.c.lead_id)),
    )
    deal_wins = select(deals.c.lead_id, deals.c.closed_at).where(
        deals.c.organization_id == organization_id,
        deals.c.status == "won",
        deals.c.lead_id.in_(select(cohort.c.lead_id)),
    )
    wins = union_all(status_wins, deal_wins).subquery("wins")
    first_wins = (
        select(wins.c.lead_id, func.min(wins.c.won_at).label("won_at")).group_by(wins.c.lead_id).subquery("first_wins")
    )
    customers = (
        select(cohort, first_wins.c.won_at)
        .select_from(cohort.join(first_wins, first_wins.c.lead_id == cohort.c.lead_id))
        .where(first_wins.c.won_at <= cohort.c.acquired_at + literal(window))
        .subquery("customers")
    )
    acquired = select(cohort.c.campaign_id, cohort.c.channel, func.count().label("acquired")).group_by(
        cohort.c.campaign_id, cohort.c.channel
    )
    return _with_paths(organization_id, acquired.subquery("acquired"), customers)


def build_rollup_journeys_query(organization_id: uuid.UUID, days: LocalDays, window: timedelta) -> CompoundSelect:
    """build_journeys_query's rows from the rollups (analytics.rollups): the acquired counts per local day,
    the customers from the won leads' facts, their paths from the touch index as before."""
    acquired = build_acquired_query(organization_id, days).subquery("acquired")
    customers = build_customers_query(organization_id, days, window).subquery("customers")
    return _with_paths(organization_id, acquired, customers)


def _with_paths(organization_id: uuid.UUID, acquired_counts: Subquery, customers: Subquery) -> CompoundSelect:
    """The `acquired` rows, then one `journey` row per customer and later touch up to its win."""
    later = lead_touches.alias("later")
    path = (
        select(later.c.occurred_at, later.c.campaign_id)
        .where(
            later.c.organization_id == organization_id,
            later.c.lead_id == customers.c.lead_id,
            ~later.c.is_first,
            later.c.occurred_at <= customers.c.won_at,
        )
        # The LIMIT keeps the planner from flattening the path into a join over all of the organization's
        # touches: each customer's path is read from the touch index (customers are few, touches many).
        .order_by(later.c.occurred_at)
        .limit(MAX_PATH_TOUCHES)
        .lateral("path")
    )
    no_time = cast(null(), DateTime(timezone=True))
    acquired = select(
        literal("acquired").label("row_kind"),
        acquired_counts.c.campaign_id,
        acquired_counts.c.channel,
        cast(acquired_counts.c.acquired, Integer).label("acquired"),
        cast(null(), Uuid).label("lead_id"),
        no_time.label("acquired_at"),
        no_time.label("won_at"),
        no_time.label("touch_at"),
        cast(null(), Uuid).label("touch_campaign_id"),
    )
    journeys = select(
        literal("journey"),
        customers.c.campaign_id,
        customers.c.channel,
        cast(null(), Integer),
        customers.c.lead_id,
        customers.c.acquired_at,
        customers.c.won_at,
        path.c.occurred_at,
        path.c.campaign_id,
    ).select_from(customers.outerjoin(path, true()))
    return union_all(acquired, journeys)


def attribution_report(
    conn: Connection,
    organization_id: uuid.UUID,
    period: Period,
    days: tuple[date | None, date | None],
    window: timedelta,
    *,
    timezone: str | None | object = UNKNOWN_ZONE,
) -> AttributionReport:
    """Leads acquired (first touch) in the period, the customers among them (won within `window` of their
    first touch), each campaign's credit under the three models (leads.rules.touches.credit_by_campaign),
    its spend in the period's days and its CAC. Statements: the rollup fold (analytics.rollup_queue), the
    journeys, the spend, the campaigns' names."""
    # The per-customer path lookups make the planner's cost estimate large enough to trigger JIT compilation,
    # which costs more (40–100 ms measured on a 100,000-lead organization) than it saves on a query this size.
    # SET LOCAL: for this transaction only.
    conn.execute(text("SET LOCAL jit = off"))
    acquired: dict[uuid.UUID | None, int] = {}
    by_channel: dict[str, list[int]] = {}  # channel -> [acquired, customers]
    firsts: dict[uuid.UUID, tuple[TouchPoint, datetime]] = {}
    later_touches: dict[uuid.UUID, list[TouchPoint]] = {}
    if timezone is UNKNOWN_ZONE:
        timezone = organization_timezone(conn, organization_id)
    local = local_days(period, timezone if isinstance(timezone, str) else None)
    if local is not None:
        fold_pending(conn, organization_id)  # what was written before this report, in the rollups it reads
    journeys = (
        build_journeys_query(organization_id, period, window)
        if local is None
        else build_rollup_journeys_query(organization_id, local, window)
    )
    for row in conn.execute(journeys).mappings():
        if row["row_kind"] == "acquired":
            acquired[row["campaign_id"]] = acquired.get(row["campaign_id"], 0) + row["acquired"]
            by_channel.setdefault(row["channel"], [0, 0])[0] += row["acquired"]
            continue
        if row["lead_id"] not in firsts:
            by_channel.setdefault(row["channel"], [0, 0])[1] += 1
        firsts[row["lead_id"]] = (TouchPoint(row["acquired_at"], row["campaign_id"]), row["won_at"])
        touches = later_touches.setdefault(row["lead_id"], [])
        if row["touch_at"] is not None:
            touches.append(TouchPoint(row["touch_at"], row["touch_campaign_id"]))
    by_lead = {
        lead_id: Journey(first=first, won_at=won, later=later_touches[lead_id])
        for lead_id, (first, won) in firsts.items()
    }
    credits = credit_by_campaign(list(by_lead.values()))
    customer_count: dict[uuid.UUID | None, int] = {}
    for journey in by_lead.values():
        customer_count[journey.first.campaign_id] = customer_count.get(journey.first.campaign_id, 0) + 1

    spend, currency = _spend_in(conn, organization_id, days)
    campaign_ids = set(acquired) | set(credits) | set(spend)
    names = _campaign_names(conn, organization_id, {c for c in campaign_ids if c is not None})
    rows = []
    for campaign_id in campaign_ids:
        credit = credits.get(campaign_id)
        campaign_spent = spend.get(campaign_id, Decimal("0.00"))
        count = customer_count.get(campaign_id, 0)
        rows.append(
            CampaignAttribution(
                campaign_id=campaign_id,
                name=NO_CAMPAIGN_LABEL if campaign_id is None else names.get(campaign_id, ""),
                acquired=acquired.get(campaign_id, 0),
                customers=count,
                spend=campaign_spent,
                cac=customer_acquisition_cost(campaign_spent, count) if campaign_id is not None else None,
                first_touch=round(float(credit.first_touch), 2) if credit else 0.0,
                last_touch=round(float(credit.last_touch), 2) if credit else 0.0,
                linear=round(float(credit.linear), 2) if credit else 0.0,
            )
        )
    rows.sort(key=lambda r: (-r.customers, -r.acquired, r.name, str(r.campaign_id)))
    return AttributionReport(
        window_days=window.days,
        currency=currency,
        acquired=sum(acquired.values()),
        customers=len(by_lead),
        spend=sum(spend.values(), Decimal("0.00")),
        campaigns=rows,
        channels=sorted(
            (
                ChannelAttribution(
                    channel=channel,
                    label=DIRECT_UNKNOWN_LABEL if channel == DIRECT_UNKNOWN else channel,
                    acquired=counts[0],
                    customers=counts[1],
                )
                for channel, counts in by_channel.items()
            ),
            key=lambda c: (-c.customers, -c.acquired, c.channel),
        ),
    )


def _spend_in(
    conn: Connection, organization_id: uuid.UUID, days: tuple[date | None, date | None]
) -> tuple[dict[uuid.UUID | None, Decimal], str | None]:
    """Each campaign's spend in the period's days (entries that overlap it, prorated by their days)."""
    first_day, last_day = days
    statement = select(
        campaign_spend.c.campaign_id,
        campaign_spend.c.period_start,
        campaign_spend.c.period_end,
        campaign_spend.c.amount,
        campaign_spend.c.currency,
    ).where(campaign_spend.c.organization_id == organization_id)
    if first_day is not None:
        statement = statement.where(campaign_spend.c.period_end >= first_day)
    if last_day is not None:
        statement = statement.where(campaign_spend.c.period_start <= last_day)
    spend: dict[uuid.UUID | None, Decimal] = {}
    currency: str | None = None
    for row in conn.execute(statement):
        part = prorated_spend(row.amount, row.period_start, row.period_end, first_day, last_day)
        spend[row.campaign_id] = spend.get(row.campaign_id, Decimal("0.00")) + part
        currency = row.currency
    return spend, currency


def _campaign_names(conn: Connection, organization_id: uuid.UUID, ids: set[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not ids:
        return {}
    return dict(
        conn.execute(
            select(lead_campaigns.c.id, lead_campaigns.c.name).where(
                lead_campaigns.c.organization_id == organization_id, lead_campaigns.c.id.in_(ids)
            )
        ).all()
    )
