"""Campaign spend (owner/admin): dated amounts per campaign, in the organization's currency, that the
attribution report prorates over its period to give a cost per customer."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Connection,
    delete,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.analytics.tables import campaign_spend
from leadcrm.directory.rules import Actor
from leadcrm.leads.tables import lead_campaigns
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import BadRequest, Conflict, NotFound, Unprocessable
from leadcrm.platform.events import CONVERSATION_INBOUND_RECEIVED as CONVERSATION_INBOUND_RECEIVED
from leadcrm.platform.ids import uuid7

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
                updated_at=sql_now(),
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
