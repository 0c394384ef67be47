"""Attribution: the touch log, the audited correction of a lead's acquisition, campaign spend, and the
per-campaign report (customers, CAC, first-touch / last-touch / linear credit). Rules: leads.rules.touches.

Where touches come from: intake writes them (leads.touches), and `conversation.inbound_received`
(task_lifecycle) adds one for a message from a lead, once per event id.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    CompoundSelect,
    Connection,
    DateTime,
    Integer,
    Text,
    Uuid,
    and_,
    cast,
    delete,
    func,
    literal,
    literal_column,
    null,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.analytics.reports import real_leads
from leadcrm.analytics.rules.attribution import (
    Journey,
    TouchPoint,
    credit_by_campaign,
    customer_acquisition_cost,
    prorated_spend,
)
from leadcrm.analytics.rules.reports import WON_STATUSES, Period
from leadcrm.analytics.tables import campaign_spend
from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activity
from leadcrm.leads.campaigns import require_attachable_campaign
from leadcrm.leads.rules.touches import (
    DIRECT_UNKNOWN,
    DIRECT_UNKNOWN_LABEL,
    TouchKind,
)
from leadcrm.leads.tables import lead_campaigns, lead_status_events, lead_touches, leads
from leadcrm.platform.errors import BadRequest, Conflict, NotFound, Unprocessable
from leadcrm.platform.events import CONVERSATION_INBOUND_RECEIVED as CONVERSATION_INBOUND_RECEIVED
from leadcrm.platform.ids import parse_uuid, uuid7

logger = logging.getLogger(__name__)

ATTRIBUTION_CORRECTED = "attribution_corrected"
TOUCH_LOG_LIMIT = 200
# A customer's path counts at most this many later touches (its oldest) besides the first.
MAX_PATH_TOUCHES = 500

TOUCH_COLUMNS = (
    lead_touches.c.id,
    lead_touches.c.kind,
    lead_touches.c.channel,
    lead_touches.c.is_first,
    lead_touches.c.occurred_at,
    lead_touches.c.campaign_id,
    lead_touches.c.utm_source,
    lead_touches.c.utm_medium,
    lead_touches.c.utm_campaign,
    lead_touches.c.utm_term,
    lead_touches.c.utm_content,
    lead_touches.c.detail,
)




# -- touches from intake -----------------------------------------------------------------------------------








def handle_inbound_received(conn: Connection, detail: dict[str, Any]) -> bool:
    """`conversation.inbound_received` (outbox envelope; payload {organizationId, conversationId, leadId|null,
    messageId, channel}): a message from a lead is a touch, appended once per event id. A message on a
    thread without a lead (a member's), of a lead erased since, or of another organization appends nothing;
    a malformed event is logged and acknowledged (a retry could never make it valid)."""
    try:
        event_id = uuid.UUID(str(detail["eventId"]))
        organization_id = uuid.UUID(str(detail["organizationId"]))
        payload = detail["payload"]
        raw_lead_id = payload.get("leadId")
        channel = str(payload.get("channel") or "other")[:32]
        occurred_at = datetime.fromisoformat(str(detail["occurredAt"])) if detail.get("occurredAt") else None
    except (KeyError, TypeError, ValueError, AttributeError):
        logger.warning("conversation.inbound_received dropped: malformed", extra={"eventId": detail.get("eventId")})
        return False
    lead_id = parse_uuid(str(raw_lead_id)) if raw_lead_id else None
    if lead_id is None:
        return False
    kind = TouchKind.EMAIL_REPLY if channel == "email" else TouchKind.MESSAGE
    values = {
        "id": literal(uuid7(), Uuid),
        "organization_id": leads.c.organization_id,
        "lead_id": leads.c.id,
        "kind": literal(kind.value, Text),
        "channel": literal(channel, Text),
        "occurred_at": literal(occurred_at, DateTime(timezone=True)) if occurred_at else func.now(),
        "detail": literal(
            {
                "conversationId": payload.get("conversationId"),
                "messageId": payload.get("messageId"),
                "eventId": str(event_id),
            },
            JSONB,
        ),
        "source_event_id": literal(event_id, Uuid),
    }
    source = select(*values.values()).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    statement = (
        pg_insert(lead_touches)
        .from_select(list(values), source)
        .on_conflict_do_nothing(
            index_elements=["organization_id", "source_event_id"],
            index_where=lead_touches.c.source_event_id.isnot(None),
        )
        .returning(lead_touches.c.id)
    )
    return conn.execute(statement).first() is not None


# -- a lead's attribution ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadAttribution:
    first_touch: dict[str, Any] | None
    touches: list[dict[str, Any]]  # every touch, the first included, oldest first (up to TOUCH_LOG_LIMIT)


def _require_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, *, lock: bool = False) -> None:
    statement = select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    if conn.execute(statement.with_for_update() if lock else statement).first() is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")


def lead_attribution(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> LeadAttribution:
    _require_lead(conn, organization_id, lead_id)
    rows = [
        dict(r)
        for r in conn.execute(
            select(*TOUCH_COLUMNS)
            .where(lead_touches.c.organization_id == organization_id, lead_touches.c.lead_id == lead_id)
            .order_by(lead_touches.c.is_first.desc(), lead_touches.c.occurred_at, lead_touches.c.id)
            .limit(TOUCH_LOG_LIMIT)
        ).mappings()
    ]
    first = next((r for r in rows if r["is_first"]), None)
    return LeadAttribution(first_touch=first, touches=rows)


def correct_attribution(
    conn: Connection,
    actor: Actor,
    lead_id: uuid.UUID,
    *,
    channel: str,
    campaign_id: uuid.UUID | None,
    reason: str,
) -> LeadAttribution:
    """Staff correct a lead's acquisition (spec "Campaign source unknown"): the first touch's channel and
    campaign change (the UTM parameters it arrived with stay as received), the lead's campaign hook follows,
    and an `attribution_corrected` timeline entry keeps who, why, and what it was before. The only way a
    first touch ever changes. 404 LEAD_NOT_FOUND; 400 CAMPAIGN_NOT_FOUND."""
    organization_id = actor.organization_id
    _require_lead(conn, organization_id, lead_id, lock=True)
    if campaign_id is not None:
        require_attachable_campaign(conn, organization_id, campaign_id)
    before = conn.execute(
        select(lead_touches.c.channel, lead_touches.c.campaign_id).where(
            lead_touches.c.organization_id == organization_id,
            lead_touches.c.lead_id == lead_id,
            lead_touches.c.is_first,
        )
    ).first()
    # A lead without a first touch (none should remain after migration 0015) gets one at its creation time.
    upsert = pg_insert(lead_touches).from_select(
        ["id", "organization_id", "lead_id", "kind", "channel", "is_first", "occurred_at", "campaign_id", "detail"],
        select(
            literal(uuid7(), Uuid),
            leads.c.organization_id,
            leads.c.id,
            literal(TouchKind.OTHER.value, Text),
            literal(channel, Text),
            true(),
            leads.c.created_at,
            literal(campaign_id, Uuid),
            literal({}, JSONB),
        ).where(leads.c.organization_id == organization_id, leads.c.id == lead_id),
    )
    conn.execute(
        upsert.on_conflict_do_update(
            index_elements=["organization_id", "lead_id"],
            index_where=lead_touches.c.is_first,
            set_={"channel": upsert.excluded.channel, "campaign_id": upsert.excluded.campaign_id},
        )
    )
    conn.execute(
        update(leads)
        .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
        .values(campaign_id=campaign_id, updated_at=func.now())
    )
    record_activity(
        conn,
        organization_id,
        lead_id,
        ATTRIBUTION_CORRECTED,
        {
            "from": {
                "channel": before.channel if before else None,
                "campaignId": str(before.campaign_id) if before and before.campaign_id else None,
            },
            "to": {"channel": channel, "campaignId": str(campaign_id) if campaign_id else None},
            # Free text a person wrote: under `note`, which a pseudonymized erasure scrubs from the timeline.
            "note": reason,
        },
        actor.user_id,
    )
    return lead_attribution(conn, organization_id, lead_id)


# -- campaign spend ----------------------------------------------------------------------------------------

SPEND_COLUMNS = (
    campaign_spend.c.id,
    campaign_spend.c.campaign_id,
    campaign_spend.c.period_start,
    campaign_spend.c.period_end,
    campaign_spend.c.amount,
    campaign_spend.c.currency,
    campaign_spend.c.note,
    campaign_spend.c.created_by_user_id,
    campaign_spend.c.created_at,
    campaign_spend.c.updated_at,
)


@dataclass(frozen=True)
class SpendEntry:
    period_start: date
    period_end: date
    amount: Decimal
    currency: str
    note: str | None = None


def _lock_campaign(conn: Connection, organization_id: uuid.UUID, campaign_id: uuid.UUID) -> None:
    """The campaign row, locked: spend writes of one campaign queue up, so the overlap check holds."""
    found = conn.execute(
        select(lead_campaigns.c.id)
        .where(lead_campaigns.c.organization_id == organization_id, lead_campaigns.c.id == campaign_id)
        .with_for_update()
    ).first()
    if found is None:
        raise NotFound("Campaign not found.", code="CAMPAIGN_NOT_FOUND")


def _check_spend(
    conn: Connection, organization_id: uuid.UUID, campaign_id: uuid.UUID, entry: SpendEntry, skip: uuid.UUID | None
) -> None:
    """One currency per organization (CAC divides one sum) and no overlapping periods within a campaign
    (a day's spend is never counted twice)."""
    others = campaign_spend.c.id != skip if skip is not None else true()
    currency = conn.execute(
        select(campaign_spend.c.currency).where(campaign_spend.c.organization_id == organization_id, others).limit(1)
    ).scalar_one_or_none()
    if currency is not None and currency != entry.currency:
        raise Unprocessable(
            f"This organization records spend in {currency}.", code="SPEND_CURRENCY_MISMATCH", currency=currency
        )
    overlapping = conn.execute(
        select(campaign_spend.c.id)
        .where(
            campaign_spend.c.organization_id == organization_id,
            campaign_spend.c.campaign_id == campaign_id,
            campaign_spend.c.period_start <= entry.period_end,
            campaign_spend.c.period_end >= entry.period_start,
            others,
        )
        .limit(1)
    ).scalar_one_or_none()
    if overlapping is not None:
        raise Conflict(
            "This campaign already has spend for part of that period.",
            code="SPEND_PERIOD_OVERLAP",
            existingSpendId=str(overlapping),
        )


def list_spend(conn: Connection, organization_id: uuid.UUID, campaign_id: uuid.UUID) -> list[dict[str, Any]]:
    """A campaign's spend entries, latest period first (a campaign has one per period: a short list)."""
    if (
        conn.execute(
            select(lead_campaigns.c.id).where(
                lead_campaigns.c.organization_id == organization_id, lead_campaigns.c.id == campaign_id
            )
        ).first()
        is None
    ):
        raise NotFound("Campaign not found.", code="CAMPAIGN_NOT_FOUND")
    return [
        dict(r)
        for r in conn.execute(
            select(*SPEND_COLUMNS)
            .where(campaign_spend.c.organization_id == organization_id, campaign_spend.c.campaign_id == campaign_id)
            .order_by(campaign_spend.c.period_start.desc(), campaign_spend.c.id.desc())
        ).mappings()
    ]


def add_spend(conn: Connection, actor: Actor, campaign_id: uuid.UUID, entry: SpendEntry) -> dict[str, Any]:
    _lock_campaign(conn, actor.organization_id, campaign_id)
    _check_spend(conn, actor.organization_id, campaign_id, entry, skip=None)
    return dict(
        conn.execute(
            pg_insert(campaign_spend)
            .values(
                id=uuid7(),
                organization_id=actor.organization_id,
                campaign_id=campaign_id,
                period_start=entry.period_start,
                period_end=entry.period_end,
                amount=entry.amount,
                currency=entry.currency,
                note=entry.note,
                created_by_user_id=actor.user_id,
            )
            .returning(*SPEND_COLUMNS)
        )
        .mappings()
        .one()
    )


def _spend_row(conn: Connection, organization_id: uuid.UUID, campaign_id: uuid.UUID, spend_id: uuid.UUID) -> dict:
    row = (
        conn.execute(
            select(*SPEND_COLUMNS).where(
                campaign_spend.c.organization_id == organization_id,
                campaign_spend.c.campaign_id == campaign_id,
                campaign_spend.c.id == spend_id,
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise NotFound("Spend entry not found.", code="SPEND_NOT_FOUND")
    return dict(row)


def change_spend(
    conn: Connection, actor: Actor, campaign_id: uuid.UUID, spend_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    """Change some fields of an entry (`changes` names SpendEntry fields); 400 when the result would end
    before it starts."""
    _lock_campaign(conn, actor.organization_id, campaign_id)
    current = _spend_row(conn, actor.organization_id, campaign_id, spend_id)
    entry = SpendEntry(
        **{name: changes.get(name, current[name]) for name in ("period_start", "period_end", "amount", "currency")},
        note=changes.get("note", current["note"]),
    )
    if entry.period_end < entry.period_start:
        raise BadRequest("The period ends before it starts.", code="INVALID_PERIOD")
    _check_spend(conn, actor.organization_id, campaign_id, entry, skip=spend_id)
    return dict(
        conn.execute(
            update(campaign_spend)
            .where(campaign_spend.c.organization_id == actor.organization_id, campaign_spend.c.id == spend_id)
            .values(
                period_start=entry.period_start,
                period_end=entry.period_end,
                amount=entry.amount,
                currency=entry.currency,
                note=entry.note,
                updated_at=func.now(),
            )
            .returning(*SPEND_COLUMNS)
        )
        .mappings()
        .one()
    )


def remove_spend(conn: Connection, actor: Actor, campaign_id: uuid.UUID, spend_id: uuid.UUID) -> None:
    deleted = conn.execute(
        delete(campaign_spend)
        .where(
            campaign_spend.c.organization_id == actor.organization_id,
            campaign_spend.c.campaign_id == campaign_id,
            campaign_spend.c.id == spend_id,
        )
        .returning(campaign_spend.c.id)
    ).first()
    if deleted is None:
        raise NotFound("Spend entry not found.", code="SPEND_NOT_FOUND")


# -- the attribution report --------------------------------------------------------------------------------


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
    # Written as the partial index's condition (literals), so PostgreSQL can prove the index applies.
    first_wins = (
        select(e.c.lead_id, func.min(e.c.changed_at).label("won_at"))
        .where(
            e.c.organization_id == organization_id,
            e.c.to_status.in_([literal_column(f"'{status}'") for status in WON_STATUSES]),
            e.c.lead_id.in_(select(cohort.c.lead_id)),
        )
        .group_by(e.c.lead_id)
        .subquery("first_wins")
    )
    customers = (
        select(cohort, first_wins.c.won_at)
        .select_from(cohort.join(first_wins, first_wins.c.lead_id == cohort.c.lead_id))
        .where(first_wins.c.won_at <= cohort.c.acquired_at + literal(window))
        .subquery("customers")
    )
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
        cohort.c.campaign_id,
        cohort.c.channel,
        func.count().label("acquired"),
        cast(null(), Uuid).label("lead_id"),
        no_time.label("acquired_at"),
        no_time.label("won_at"),
        no_time.label("touch_at"),
        cast(null(), Uuid).label("touch_campaign_id"),
    ).group_by(cohort.c.campaign_id, cohort.c.channel)
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
) -> AttributionReport:
    """Leads acquired (first touch) in the period, the customers among them (won within `window` of their
    first touch), each campaign's credit under the three models (leads.rules.touches.credit_by_campaign),
    its spend in the period's days and its CAC. Statements: the journeys, the spend, the campaigns' names."""
    # The per-customer path lookups make the planner's cost estimate large enough to trigger JIT compilation,
    # which costs more (40–100 ms measured on a 100,000-lead organization) than it saves on a query this size.
    # SET LOCAL: for this transaction only.
    conn.execute(text("SET LOCAL jit = off"))
    acquired: dict[uuid.UUID | None, int] = {}
    by_channel: dict[str, list[int]] = {}  # channel -> [acquired, customers]
    firsts: dict[uuid.UUID, tuple[TouchPoint, datetime]] = {}
    later_touches: dict[uuid.UUID, list[TouchPoint]] = {}
    for row in conn.execute(build_journeys_query(organization_id, period, window)).mappings():
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
