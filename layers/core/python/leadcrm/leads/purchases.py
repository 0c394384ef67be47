"""Course purchases (the platform's `entitlement.activated`): a purchase tag on the member's lead, and a won lead
becomes a customer."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import system_actor
from leadcrm.leads.conversion import MAX_COURSE_TAG_NAME, PURCHASE_ACTIVITY
from leadcrm.leads.identity import (
    find_lead_for_person,
    organization_region,
    person_for_user,
)
from leadcrm.leads.moves import LeadUpdate, lock_lead, update_lead
from leadcrm.leads.rules.moves import is_converted
from leadcrm.leads.tables import lead_activity_events
from leadcrm.leads.tags import PURCHASE, attach_tag, find_or_create_tag
from leadcrm.pipelines.rules.statuses import StageCategory, is_won
from leadcrm.pipelines.stages import first_active_stage
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7


@dataclass(frozen=True)
class CoursePurchase:
    organization_id: uuid.UUID
    user_id: uuid.UUID
    entitlement_id: uuid.UUID
    course_id: str
    course_name: str

def record_course_purchase(uow: UnitOfWork, purchase: CoursePurchase) -> uuid.UUID | None:
    """An activated entitlement: the buyer's lead gets the course's purchase tag, a `purchase` entry, and
    moves to its pipeline's first active customer stage unless it is already won (spec "Course purchases
    tag the contact + move it to Customer").

    Buyers with no lead here are no-ops. Once per entitlement: the `purchase` entry carries the entitlement
    id as its source_event_id (unique per type), and it is written first, so a replay stops there and
    changes nothing. Returns the lead, or None when nothing was recorded.
    """
    conn = uow.connection
    organization_id = purchase.organization_id
    region = organization_region(conn, organization_id)
    person = person_for_user(conn, purchase.user_id, default_region=region)
    if person is None:
        return None
    lead_id = find_lead_for_person(conn, organization_id, person.key, default_region=region, user_id=purchase.user_id)
    if lead_id is None:
        return None
    lead = lock_lead(conn, organization_id, lead_id)
    recorded = conn.execute(
        pg_insert(lead_activity_events)
        .values(
            id=uuid7(),
            organization_id=organization_id,
            lead_id=lead_id,
            type=PURCHASE_ACTIVITY,
            payload={
                "entitlementId": str(purchase.entitlement_id),
                "courseId": purchase.course_id,
                "courseName": purchase.course_name,
            },
            source_event_id=purchase.entitlement_id,
        )
        .on_conflict_do_nothing(
            index_elements=["source_event_id", "type"],
            index_where=lead_activity_events.c.source_event_id.isnot(None),
        )
        .returning(lead_activity_events.c.id)
    ).first()
    if recorded is None:
        return None
    tag_name = purchase.course_name[:MAX_COURSE_TAG_NAME]
    attach_tag(conn, organization_id, lead_id, find_or_create_tag(conn, organization_id, tag_name, PURCHASE))
    _mark_customer(uow, organization_id, lead)
    return lead_id

def _mark_customer(uow: UnitOfWork, organization_id: uuid.UUID, lead: dict[str, Any]) -> None:
    """markCustomer: to the primary pipeline's first active customer stage, when it has one and the lead is
    not won already (a converted member stays converted)."""
    if is_won(StageCategory(lead["status"])) or is_converted(lead["status"], lead["converted_membership_id"]):
        return
    target = first_active_stage(uow.connection, organization_id, lead["pipeline_id"], StageCategory.CUSTOMER)
    if target is None:
        return
    update_lead(uow, system_actor(organization_id), lead["id"], LeadUpdate(stage_id=target.id), locked=lead)

MAX_COURSE_NAME = 500
