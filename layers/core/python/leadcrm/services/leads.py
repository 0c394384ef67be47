"""Creating leads: the path every entry point shares (G1 public capture, G2 staff create, ingestion).

One create = dedup against the organization's leads (serialized per person), the lead on the default
pipeline's New stage, its first status event, a receipt of what the entry point was sent, the auto-task,
and `lead.created`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Uuid, insert, literal, null, select
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.db.tables import lead_receipts, lead_status_events, leads
from leadcrm.db.uow import UnitOfWork
from leadcrm.domain.access import Actor
from leadcrm.domain.events import LEAD_CREATED, DomainEvent
from leadcrm.domain.intake import MatchResolution, contact_task_title, resolve_match
from leadcrm.errors import Conflict
from leadcrm.ids import uuid7
from leadcrm.services.activity import record_activity
from leadcrm.services.auto_tasks import create_contact_task
from leadcrm.services.campaigns import require_attachable_campaign
from leadcrm.services.dedup import ExistingLead, find_same_person, lock_person
from leadcrm.services.ownership import require_assignable_staff
from leadcrm.services.pipelines import StagePlacement, default_new_stage

STAFF_CHANNEL = "staff"
OWNER_CHANGED_ACTIVITY = "owner_changed"

LEAD_COLUMNS = (
    leads.c.id,
    leads.c.organization_id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.locale,
    leads.c.note,
    leads.c.lost_reason,
    leads.c.source,
    leads.c.status,
    leads.c.pipeline_id,
    leads.c.stage_id,
    leads.c.campaign_id,
    leads.c.assigned_to_user_id,
    leads.c.is_test,
    leads.c.archived_at,
    leads.c.trial_date,
    leads.c.next_action_at,
    leads.c.next_action_type,
    leads.c.next_action_note,
    leads.c.status_changed_at,
    leads.c.created_at,
    leads.c.updated_at,
)


@dataclass(frozen=True)
class NewLead:
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    locale: str | None = None
    note: str | None = None
    source: str = "manual"
    is_test: bool = False
    campaign_id: uuid.UUID | None = None
    assigned_to_user_id: uuid.UUID | None = None


class DuplicateLead(Conflict):
    """409 DUPLICATE_LEAD: the person is already a lead of this organization. Raised before anything is
    written, so a caller (the public capture) may catch it and go on in the same transaction."""

    def __init__(self, existing: ExistingLead) -> None:
        super().__init__(
            "This person is already a lead of this organization.",
            code="DUPLICATE_LEAD",
            existingLeadId=str(existing.id),
            existingLeadName=existing.name,
        )
        self.existing = existing


def create_lead(
    uow: UnitOfWork, actor: Actor, new: NewLead, *, received: dict[str, Any] | None = None
) -> dict[str, Any]:
    """G2: a staff member creates a lead. The campaign must be a live hook of this organization and the
    assignee an active staff member of it; `received` is the body as the staff member sent it."""
    conn = uow.connection
    if new.campaign_id is not None:
        require_attachable_campaign(conn, actor.organization_id, new.campaign_id)
    if new.assigned_to_user_id is not None:
        require_assignable_staff(conn, actor.organization_id, new.assigned_to_user_id)
    lead = intake_lead(
        uow, actor.organization_id, new, actor_user_id=actor.user_id, channel=STAFF_CHANNEL, received=received
    )
    if new.assigned_to_user_id is not None:
        record_activity(
            conn,
            actor.organization_id,
            lead["id"],
            OWNER_CHANGED_ACTIVITY,
            {"fromUserId": None, "toUserId": str(new.assigned_to_user_id)},
            actor_user_id=actor.user_id,
        )
    return lead


def intake_lead(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    new: NewLead,
    *,
    actor_user_id: uuid.UUID | None,
    channel: str,
    received: dict[str, Any] | None,
) -> dict[str, Any]:
    """The create every entry point shares; raises DuplicateLead when the person is already a lead here.

    Checks (campaign, assignee) are the caller's: this trusts `new`. `channel` names the entry point on the
    receipt ('staff', 'minisite', ...), `received` is what it was sent, kept as sent.
    """
    conn = uow.connection
    lock_person(conn, organization_id, new.email, new.phone)
    existing = find_same_person(conn, organization_id, new.email, new.phone)
    if existing is not None:
        # The returning-leads issue adds its REOPEN case here (decided in domain.intake.resolve_match).
        match resolve_match(existing.status, existing.archived_at is not None):
            case MatchResolution.DUPLICATE:
                raise DuplicateLead(existing)
    placement = default_new_stage(conn, organization_id)
    lead = _insert_lead(conn, organization_id, new, placement, actor_user_id, channel, received or {})
    create_contact_task(conn, organization_id, lead["id"], contact_task_title(new.name, new.email, new.phone))
    uow.add_event(
        DomainEvent(
            type=LEAD_CREATED,
            organization_id=organization_id,
            aggregate_id=lead["id"],
            payload={
                "leadId": str(lead["id"]),
                "source": new.source,
                "stageId": str(placement.stage_id),
                "campaignId": str(new.campaign_id) if new.campaign_id else None,
                "actorUserId": str(actor_user_id) if actor_user_id else None,
            },
        )
    )
    return lead


def _insert_lead(
    conn: Connection,
    organization_id: uuid.UUID,
    new: NewLead,
    placement: StagePlacement,
    actor_user_id: uuid.UUID | None,
    channel: str,
    received: dict[str, Any],
) -> dict[str, Any]:
    """The lead, its first status event (nothing -> new, at the lead's creation time) and its receipt, in
    one statement: the status event and the receipt are data-modifying CTEs reading the inserted row."""
    new_lead = (
        insert(leads)
        .values(
            id=uuid7(),
            organization_id=organization_id,
            name=new.name,
            email=new.email,
            phone=new.phone,
            locale=new.locale,
            note=new.note,
            source=new.source,
            is_test=new.is_test,
            status=placement.category.value,
            pipeline_id=placement.pipeline_id,
            stage_id=placement.stage_id,
            campaign_id=new.campaign_id,
            assigned_to_user_id=new.assigned_to_user_id,
            created_by_user_id=actor_user_id,
        )
        .returning(*LEAD_COLUMNS)
        .cte("new_lead")
    )
    status_event = insert(lead_status_events).from_select(
        ["id", "organization_id", "lead_id", "from_status", "to_status", "to_stage_id", "actor_user_id", "changed_at"],
        select(
            literal(uuid7(), Uuid),
            new_lead.c.organization_id,
            new_lead.c.id,
            null(),
            new_lead.c.status,
            new_lead.c.stage_id,
            literal(actor_user_id, Uuid),
            new_lead.c.created_at,
        ),
    )
    receipt = insert(lead_receipts).from_select(
        ["id", "organization_id", "lead_id", "channel", "duplicate", "payload", "received_at"],
        select(
            literal(uuid7(), Uuid),
            new_lead.c.organization_id,
            new_lead.c.id,
            literal(channel),
            literal(False),
            literal(received, JSONB),
            new_lead.c.created_at,
        ),
    )
    statement = select(new_lead).add_cte(status_event.cte("status_event"), receipt.cte("receipt"))
    return dict(conn.execute(statement).mappings().one())


def record_receipt(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    channel: str,
    received: dict[str, Any],
    *,
    duplicate: bool,
) -> uuid.UUID:
    """A receipt of what an entry point was sent, on an existing lead (a resubmission, an import row)."""
    receipt_id = uuid7()
    conn.execute(
        insert(lead_receipts).values(
            id=receipt_id,
            organization_id=organization_id,
            lead_id=lead_id,
            channel=channel,
            duplicate=duplicate,
            payload=received,
        )
    )
    return receipt_id
