"""Creating a deal: on a stage of one of the organization's deal pipelines, with its people (a lead, a member,
a contact) checked as the organization's, its owner assignable staff, and the first history row."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import Connection, insert, select

from leadcrm.deals.deals import DEAL_CREATED, HISTORY_CREATED, deal_event, history_row, record_history
from leadcrm.deals.pipelines import get_deal_pipeline
from leadcrm.deals.queries import read_deal
from leadcrm.deals.rules import deals as rules
from leadcrm.deals.rules.deals import (
    DealStatus,
    ForecastCategory,
    OfferType,
    StageKind,
)
from leadcrm.deals.tables import deals
from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.directory.tables import memberships
from leadcrm.leads.tables import leads
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import uuid7


@dataclass(frozen=True)
class NewDeal:
    title: str
    offer_type: OfferType
    value_minor: int
    currency: str
    expected_close_date: date
    lead_id: uuid.UUID | None = None
    membership_id: uuid.UUID | None = None
    offer_ref: str | None = None
    owner_user_id: uuid.UUID | None = None
    stage_id: uuid.UUID | None = None
    probability: int | None = None
    forecast_category: ForecastCategory | None = None

def create_deal(uow: UnitOfWork, actor: Actor, new: NewDeal) -> dict[str, Any]:
    """Opens a deal on a New stage, with a lead, a member or both (a converted lead's deal links both).

    404 LEAD_NOT_FOUND / MEMBERSHIP_NOT_FOUND for another organization's; 400 DEAL_PARTIES_MISMATCH when the
    lead was converted into another membership than the one named; 400 ASSIGNEE_NOT_STAFF for an owner who
    is not an active staff member; 400 CURRENCY_UNKNOWN; 400 DEAL_MUST_START_NEW for a stage of another kind.
    """
    conn = uow.connection
    if not rules.valid_currency(new.currency):
        raise BadRequest("currency must be an ISO 4217 code.", code="CURRENCY_UNKNOWN")
    lead_id, membership_id = _parties(conn, actor.organization_id, new.lead_id, new.membership_id)
    owner = new.owner_user_id or actor.user_id
    if owner is not None:
        require_assignable_staff(conn, actor.organization_id, owner)
    pipeline = get_deal_pipeline(conn, actor.organization_id)
    first_new = pipeline.first_of(StageKind.NEW)
    assert first_new is not None  # the pipeline invariants keep one
    stage = pipeline.stage(new.stage_id) if new.stage_id is not None else first_new
    if stage.kind is not StageKind.NEW:
        raise BadRequest("A deal opens on a New stage.", code="DEAL_MUST_START_NEW")
    deal_id = uuid7()
    row = (
        conn.execute(
            insert(deals)
            .values(
                id=deal_id,
                organization_id=actor.organization_id,
                pipeline_id=pipeline.id,
                stage_id=stage.id,
                status=DealStatus.OPEN.value,
                title=new.title,
                offer_type=new.offer_type.value,
                offer_ref=new.offer_ref,
                lead_id=lead_id,
                membership_id=membership_id,
                value_minor=new.value_minor,
                currency=new.currency,
                expected_close_date=new.expected_close_date,
                probability=new.probability,
                forecast_category=new.forecast_category.value if new.forecast_category else None,
                owner_user_id=owner,
                created_by_user_id=actor.user_id,
            )
            .returning(*deals.c)
        )
        .mappings()
        .one()
    )
    history = history_row(
        actor.user_id,
        row,
        HISTORY_CREATED,
        payload={"stageId": str(stage.id), "assigneeUserId": str(owner) if owner else None},
    )
    history.update(to_stage_id=stage.id, to_status=DealStatus.OPEN.value)
    record_history(uow, actor, row, history, deal_event(DEAL_CREATED, actor, row, stageId=str(stage.id)))
    return read_deal(conn, actor.organization_id, deal_id)

def _parties(
    conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID | None, membership_id: uuid.UUID | None
) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """The lead and membership the deal is with. Both rows are taken FOR KEY SHARE (like the foreign-key
    check would), so an erase or a membership removal cannot slip in between the check and the insert."""
    if lead_id is not None:
        lead = conn.execute(
            select(leads.c.id, leads.c.converted_membership_id)
            .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
            .with_for_update(read=True, key_share=True)
        ).first()
        if lead is None:
            raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
        if membership_id is not None and membership_id != lead.converted_membership_id:
            raise BadRequest(
                "The lead is not linked to that membership; name the lead alone (its member follows).",
                code="DEAL_PARTIES_MISMATCH",
            )
        return lead.id, lead.converted_membership_id
    if membership_id is None:
        raise BadRequest("A deal is with a lead or a member: give leadId or membershipId.", code="DEAL_NEEDS_PARTY")
    found = conn.execute(
        select(memberships.c.id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.id == membership_id,
            memberships.c.deleted_at.is_(None),
        )
        .with_for_update(read=True, key_share=True)
    ).first()
    if found is None:
        raise NotFound("Membership not found.", code="MEMBERSHIP_NOT_FOUND")
    # A member who came in as a lead: the deal shows on that lead's timeline too (the oldest such lead).
    converted_lead = conn.execute(
        select(leads.c.id)
        .where(leads.c.organization_id == organization_id, leads.c.converted_membership_id == membership_id)
        .order_by(leads.c.created_at, leads.c.id)
        .limit(1)
    ).scalar_one_or_none()
    return converted_lead, membership_id
