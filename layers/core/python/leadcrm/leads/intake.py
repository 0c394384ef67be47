"""Creating leads: the path every entry point shares (G1 public capture, G2 staff create, ingestion).

One create = dedup against the organization's leads (serialized per person), the lead on the default
pipeline's New stage, its first status event, a receipt of what the entry point was sent, the auto-task,
and `lead.created`. A match on a closed lead that came back through an entry point is reopened instead
(`leads.returning.return_lead`, decided in `leads.rules.intake.resolve_match`): then nothing is created.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Uuid, insert, literal, null, select
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.leads.activity import record_activity
from leadcrm.leads.assignment import lead_traits, place, rule_activities, rule_activity_row
from leadcrm.leads.campaigns import require_attachable_campaign
from leadcrm.leads.dedup import ExistingLead, IntakeContext, find_same_person, open_intake
from leadcrm.leads.messages import CreationWrites, LeadCreated
from leadcrm.leads.returning import return_lead
from leadcrm.leads.rules.assignment import LeadTraits
from leadcrm.leads.rules.intake import MatchResolution, contact_task_title, resolve_match
from leadcrm.leads.rules.returning import ReturnTouch, ReturnVia
from leadcrm.leads.tables import LEAD_COLUMNS, lead_receipts, lead_status_events, leads
from leadcrm.leads.touches import append_receipt_touch, first_touch_insert
from leadcrm.pipelines.stages import StagePlacement, default_new_stage
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict
from leadcrm.platform.events import LEAD_CREATED, DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.platform.messagebus import handle

STAFF_CHANNEL = "staff"
OWNER_CHANGED_ACTIVITY = "owner_changed"


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
    # The Meta form id or WhatsApp number id the lead came through (assignment rules match it; not stored).
    form_ref: str | None = None


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


class IntakeOutcome(StrEnum):
    CREATED = "created"  # a new lead
    REOPENED = "reopened"  # a closed lead of this person came back (spec "Returning leads")


@dataclass(frozen=True)
class Intake:
    """What an intake did, and the lead it did it to (LEAD_COLUMNS; a reopened lead has the return columns
    too)."""

    lead: dict[str, Any]
    outcome: IntakeOutcome

    @property
    def created(self) -> bool:
        return self.outcome is IntakeOutcome.CREATED


def create_lead(uow: UnitOfWork, actor: Actor, new: NewLead, *, received: dict[str, Any] | None = None) -> Intake:
    """G2: a staff member creates a lead, or reopens the closed lead of the same person. The campaign must be
    a live hook of this organization and the assignee an active staff member of it; `received` is the body
    as the staff member sent it. On a reopen the staff member (or the assignee they chose) takes the lead
    when it has no owner, and only name, email, phone, note and campaign are taken from the body."""
    conn = uow.connection
    if new.campaign_id is not None:
        require_attachable_campaign(conn, actor.organization_id, new.campaign_id)
    if new.assigned_to_user_id is not None:
        require_assignable_staff(conn, actor.organization_id, new.assigned_to_user_id)
    intake = intake_lead(
        uow,
        actor.organization_id,
        new,
        actor_user_id=actor.user_id,
        channel=STAFF_CHANNEL,
        received=received,
        via=ReturnVia.STAFF_CREATE,
    )
    if intake.created and new.assigned_to_user_id is not None:
        record_activity(
            conn,
            actor.organization_id,
            intake.lead["id"],
            OWNER_CHANGED_ACTIVITY,
            {"fromUserId": None, "toUserId": str(new.assigned_to_user_id)},
            actor_user_id=actor.user_id,
        )
    return intake


def intake_lead(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    new: NewLead,
    *,
    actor_user_id: uuid.UUID | None,
    channel: str,
    received: dict[str, Any] | None,
    via: ReturnVia | None = None,
    dedup: bool = True,
    recovered_signup: bool = False,
    context: IntakeContext | None = None,
) -> Intake:
    """The create every entry point shares; raises DuplicateLead when the person is already a lead here.

    Checks (campaign, assignee) are the caller's: this trusts `new`. `channel` names the entry point on the
    receipt ('staff', 'minisite', ...), `received` is what it was sent, kept as sent.

    `via` makes the caller a returning-leads entry point: a match on a closed lead reopens it (with the
    touch taken from `new`) instead of raising. Without it (the CSV import, on purpose) every match is a
    duplicate. `dedup=False` is for a caller that already matched the person its own way under `lock_person`
    (a released join matches on a person, never on a bare field). `recovered_signup` marks lead.created.
    `context`: the caller already opened the intake (`leads.dedup.open_intake`, the person lock included).
    """
    conn = uow.connection
    if context is None:
        # The person lock (a dedup'ing create) and the organization's data in one statement.
        context = open_intake(conn, organization_id, new.email if dedup else None, new.phone if dedup else None)
    if dedup:
        existing = find_same_person(conn, organization_id, new.email, new.phone, context=context)
        if existing is not None:
            reopened = reopen_returning(uow, organization_id, existing, new, actor_user_id, via)
            if reopened is None:
                raise DuplicateLead(existing)
            record_receipt(
                conn, organization_id, existing.id, channel, received or {}, duplicate=True, campaign_id=new.campaign_id
            )
            return Intake(reopened, IntakeOutcome.REOPENED)
    placement = default_new_stage(conn, organization_id, known=context.placement if context else None)
    lead_id = uuid7()
    placed = None
    if new.assigned_to_user_id is None and context is not None and context.has_assignment_rules:
        placed = place(conn, organization_id, _traits(new, placement.pipeline_id, context.timezone), context.timezone)
        if placed is not None:
            new = dataclasses.replace(new, assigned_to_user_id=placed.user_id)
    uow.add_event(
        DomainEvent(
            type=LEAD_CREATED,
            organization_id=organization_id,
            aggregate_id=lead_id,
            payload={
                "leadId": str(lead_id),
                "source": new.source,
                "stageId": str(placement.stage_id),
                "campaignId": str(new.campaign_id) if new.campaign_id else None,
                "actorUserId": str(actor_user_id) if actor_user_id else None,
                # A released join is a recovered signup, not a cold lead: new_lead automations skip it.
                **({"recoveredSignup": True} if recovered_signup else {}),
            },
        )
    )
    # The auto-task (work) and the lead's seed follow-up go in the lead's own statement, as its outbox row.
    title = contact_task_title(new.name, new.email, new.phone)
    timezone = context.timezone if context else None
    writes = [w for w in handle(conn, LeadCreated(organization_id, lead_id, timezone, title)) if w is not None]
    if placed is not None:  # the timeline records the rule, in the lead's own statement
        entry = rule_activity_row(organization_id, lead_id, placed)
        writes.append(CreationWrites(statements=(rule_activities([entry]),)))
    lead = _insert_lead(uow, organization_id, lead_id, new, placement, actor_user_id, channel, received or {}, writes)
    return Intake(lead, IntakeOutcome.CREATED)


def _traits(new: NewLead, pipeline_id: uuid.UUID | None, timezone: str | None) -> LeadTraits:
    return lead_traits(
        source=new.source,
        campaign_id=new.campaign_id,
        pipeline_id=pipeline_id,
        form_ref=new.form_ref,
        locale=new.locale,
        timezone=timezone,
    )


def reopen_returning(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    existing: ExistingLead,
    new: NewLead,
    actor_user_id: uuid.UUID | None,
    via: ReturnVia | None,
) -> dict[str, Any] | None:
    """The dedup seam: the reopened lead when the match is a closed lead and the caller an entry point, else
    None (a duplicate). A lead reopened or won between the dedup read and the row lock is a duplicate too;
    `return_lead` wrote nothing then, so the caller may still go on in the same transaction."""
    if existing.suppressed:
        return None
    resolution = resolve_match(
        existing.status,
        existing.archived_at is not None,
        converted_membership_id=existing.converted_membership_id,
        entry_point=via is not None,
    )
    if resolution is MatchResolution.DUPLICATE or via is None:
        return None

    outcome = return_lead(
        uow,
        organization_id,
        existing.id,
        via=via,
        actor_user_id=actor_user_id,
        touch=ReturnTouch(note=new.note, name=new.name, email=new.email, phone=new.phone, campaign_id=new.campaign_id),
        owner_user_id=new.assigned_to_user_id,
    )
    return outcome.lead if outcome.reopened else None


def _insert_lead(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    new: NewLead,
    placement: StagePlacement,
    actor_user_id: uuid.UUID | None,
    channel: str,
    received: dict[str, Any],
    writes: list[CreationWrites],
) -> dict[str, Any]:
    """The lead, its first status event (nothing -> new, at the lead's creation time), its receipt, its first
    touch (analytics.attribution), what subscribers write with it (the auto-task and the seed follow-up) and
    the unit's outbox rows, in one statement: data-modifying CTEs beside the INSERT of the lead."""
    receipt_id = uuid7()
    subscribed_values: dict[str, Any] = {}
    for written in writes:
        subscribed_values.update(written.lead_values)
    new_lead = (
        insert(leads)
        .values(
            id=lead_id,
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
            **subscribed_values,
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
            literal(receipt_id, Uuid),
            new_lead.c.organization_id,
            new_lead.c.id,
            literal(channel),
            literal(False),
            literal(received, JSONB),
            new_lead.c.created_at,
        ),
    )
    first_touch = first_touch_insert(
        new_lead,
        source=new.source,
        campaign_id=new.campaign_id,
        entry_channel=channel,
        received=received,
        receipt_id=receipt_id,
    )
    subscribed = [cte for written in writes for cte in written.statements]
    statement = select(new_lead).add_cte(
        status_event.cte("status_event"), receipt.cte("receipt"), first_touch.cte("first_touch"), *subscribed
    )
    return dict(uow.execute_with_events(statement).mappings().one())


def record_receipt(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    channel: str,
    received: dict[str, Any],
    *,
    duplicate: bool,
    campaign_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """A receipt of what an entry point was sent, on an existing lead (a resubmission, an import row), and
    the touch it is in the lead's attribution log (with the campaign the entry point resolved, if any)."""
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
    append_receipt_touch(
        conn, organization_id, lead_id, channel, received, campaign_id=campaign_id, receipt_id=receipt_id
    )
    return receipt_id
