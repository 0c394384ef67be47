"""Reading deals (staff): one deal with its history and compensations, and the filtered keyset list.

A deal is read with its stage joined (name, kind) and its effective probability and forecast category (its
own, else its stage's; a closed deal's are what happened: 100 % or 0 %, `closed`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select

from leadcrm.deals.rules.deals import DealStatus, ForecastCategory
from leadcrm.deals.tables import deal_compensations, deal_history, deal_stages, deals
from leadcrm.platform.assignee import Assignee
from leadcrm.platform.db.filters import assignee_condition
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import parse_uuid
from leadcrm.platform.keyset import decode_keyset, encode_keyset, keyset_instant
from leadcrm.platform.periods import check_days

HISTORY_LIMIT = 200


def deal_not_found() -> NotFound:
    return NotFound("Deal not found.", code="DEAL_NOT_FOUND")


_EFFECTIVE_PROBABILITY = func.coalesce(deals.c.probability, deal_stages.c.probability)
_EFFECTIVE_CATEGORY = func.coalesce(deals.c.forecast_category, deal_stages.c.forecast_category)
DEAL_COLUMNS = (
    *deals.c,
    deal_stages.c.name.label("stage_name"),
    deal_stages.c.kind.label("stage_kind"),
    _EFFECTIVE_PROBABILITY.label("effective_probability"),
    _EFFECTIVE_CATEGORY.label("effective_forecast_category"),
)


def _deal_select() -> Any:
    return select(*DEAL_COLUMNS).select_from(
        deals.join(
            deal_stages,
            and_(deal_stages.c.id == deals.c.stage_id, deal_stages.c.organization_id == deals.c.organization_id),
        )
    )


def read_deal(conn: Connection, organization_id: uuid.UUID, deal_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(_deal_select().where(deals.c.organization_id == organization_id, deals.c.id == deal_id))
        .mappings()
        .first()
    )
    if row is None:
        raise deal_not_found()
    return _public(row)


def _public(row: Mapping[str, Any]) -> dict[str, Any]:
    deal = dict(row)
    if deal["status"] in (DealStatus.WON, DealStatus.LOST):
        # A closed deal is actual, not forecast: its probability is what happened.
        deal["effective_probability"] = 100 if deal["status"] == DealStatus.WON else 0
        deal["effective_forecast_category"] = ForecastCategory.CLOSED.value
    return deal


def get_deal(conn: Connection, organization_id: uuid.UUID, deal_id: uuid.UUID) -> dict[str, Any]:
    """The deal with its history (newest first) and compensations (oldest first): three statements."""
    deal = read_deal(conn, organization_id, deal_id)
    history = conn.execute(
        select(deal_history)
        .where(deal_history.c.organization_id == organization_id, deal_history.c.deal_id == deal_id)
        .order_by(deal_history.c.occurred_at.desc(), deal_history.c.id.desc())
        .limit(HISTORY_LIMIT)
    ).mappings()
    compensations = conn.execute(
        select(deal_compensations)
        .where(deal_compensations.c.organization_id == organization_id, deal_compensations.c.deal_id == deal_id)
        .order_by(deal_compensations.c.created_at, deal_compensations.c.id)
    ).mappings()
    deal["history"] = [dict(h) for h in history]
    deal["compensations"] = [dict(c) for c in compensations]
    deal["net_value_minor"] = deal["value_minor"] + sum(c["amount_minor"] for c in deal["compensations"])
    return deal


@dataclass(frozen=True)
class DealFilters:
    statuses: tuple[DealStatus, ...] = ()
    stage_id: uuid.UUID | None = None
    assignee: Assignee | None = None
    lead_id: uuid.UUID | None = None
    membership_id: uuid.UUID | None = None
    currency: str | None = None
    expected_close_from: date | None = None
    expected_close_to: date | None = None


def list_deals(
    conn: Connection, organization_id: uuid.UUID, filters: DealFilters, *, cursor: str | None, limit: int
) -> tuple[list[dict[str, Any]], str | None]:
    """One page, newest first (keyset on created_at, id; one query), and the next page's cursor."""
    conditions: list[Any] = [deals.c.organization_id == organization_id]
    if filters.statuses:
        conditions.append(deals.c.status.in_([s.value for s in filters.statuses]))
    for column, value in (
        (deals.c.stage_id, filters.stage_id),
        (deals.c.lead_id, filters.lead_id),
        (deals.c.membership_id, filters.membership_id),
        (deals.c.currency, filters.currency),
    ):
        if value is not None:
            conditions.append(column == value)
    if filters.assignee is not None:
        conditions.append(assignee_condition(deals.c.owner_user_id, filters.assignee))
    check_days(filters.expected_close_from, filters.expected_close_to)
    if filters.expected_close_from is not None:
        conditions.append(deals.c.expected_close_date >= filters.expected_close_from)
    if filters.expected_close_to is not None:
        conditions.append(deals.c.expected_close_date <= filters.expected_close_to)
    if cursor is not None:
        conditions.append(_before(cursor))
    rows = (
        conn.execute(
            _deal_select().where(*conditions).order_by(deals.c.created_at.desc(), deals.c.id.desc()).limit(limit + 1)
        )
        .mappings()
        .all()
    )
    page = [_public(r) for r in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        last = page[-1]
        next_cursor = encode_keyset([last["created_at"].isoformat(), str(last["id"])])
    return page, next_cursor


def _before(cursor: str) -> Any:
    raw_at, raw_id = decode_keyset(cursor, 2)
    last_id = parse_uuid(raw_id)
    last_at = keyset_instant(raw_at)
    if last_id is None:
        raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
    return or_(deals.c.created_at < last_at, and_(deals.c.created_at == last_at, deals.c.id < last_id))
