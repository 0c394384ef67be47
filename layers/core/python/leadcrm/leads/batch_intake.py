"""Creating many leads of one organization at once (a batch of webhook leads, ingestion.webhook_leads): the
rules of `leads.intake.intake_lead` per lead, with every create of the batch in one statement.

Each arrival, in order, is matched against the organization's leads, then against the batch's earlier
creates (as if those had been committed before it: the same email, or the same phone read in the
organization's region), then against its pseudonymized people; a match is reopened or is a duplicate exactly
as in `intake_lead`. What is left is created by one INSERT of all the leads with their first status events,
receipts, first touches, what subscribers write with them (`LeadsCreated`: the auto-tasks and seed
follow-ups) and the unit's outbox rows: data-modifying CTEs over one recordset.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Boolean, Connection, Text, Uuid, insert, literal, null, select
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.directory.rules import phone_region
from leadcrm.leads.assignment import Placed, lead_traits, place_many, rule_activities, rule_activity_row
from leadcrm.leads.dedup import ExistingLead, IntakeContext, match_candidate, same_person_candidates
from leadcrm.leads.intake import DuplicateLead, Intake, IntakeOutcome, NewLead, record_receipt, reopen_returning
from leadcrm.leads.messages import CreationWrites, LeadsCreated
from leadcrm.leads.pseudonym_tokens import find_pseudonymized
from leadcrm.leads.rules.identity import last_seven_digits
from leadcrm.leads.rules.intake import contact_task_title, normalized_email, phone_digits, same_phone
from leadcrm.leads.rules.returning import ReturnVia
from leadcrm.leads.tables import LEAD_COLUMNS, lead_receipts, lead_status_events, leads
from leadcrm.leads.touches import FIRST_TOUCH_ROW_COLUMNS, first_touch_row, first_touches_insert
from leadcrm.pipelines.stages import StagePlacement, default_new_stage
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.events import LEAD_CREATED, DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.platform.messagebus import handle

_ROW_COLUMNS = {
    "id": Uuid,
    "name": Text,
    "email": Text,
    "phone": Text,
    "locale": Text,
    "note": Text,
    "source": Text,
    "is_test": Boolean,
    "campaign_id": Uuid,
    "assigned_to_user_id": Uuid,
    "status_event_id": Uuid,
    "receipt_id": Uuid,
    "channel": Text,
    "received": JSONB,
    **FIRST_TOUCH_ROW_COLUMNS,
}


@dataclass(frozen=True)
class Arrival:
    """One lead an entry point received: who (`new`, its checks done), on which receipt channel, what it was
    sent, and the returning-leads entry point it is (None: every match is a duplicate)."""

    new: NewLead
    channel: str
    received: dict[str, Any]
    via: ReturnVia | None


@dataclass(frozen=True)
class _Create:
    index: int
    lead_id: uuid.UUID
    arrival: Arrival


def intake_many(
    uow: UnitOfWork, organization_id: uuid.UUID, arrivals: Sequence[Arrival], *, context: IntakeContext
) -> list[Intake | DuplicateLead]:
    """`intake_lead` for each arrival, in order (no actor: an integration's leads); a duplicate is returned,
    not raised, and nothing is written for it. The caller holds every person lock of the batch
    (`leads.dedup.lock_people`) and read `context` after taking them."""
    conn = uow.connection
    region = phone_region(context.pseudonyms.country_code, context.pseudonyms.timezone)
    candidates = same_person_candidates(conn, organization_id, [(a.new.email, a.new.phone) for a in arrivals])
    results: list[Intake | DuplicateLead | None] = []
    creates: list[_Create] = []
    for arrival in arrivals:
        new = arrival.new
        candidate = match_candidate(candidates, new.email, new.phone, region)
        existing = candidate.as_existing() if candidate is not None else _earlier_create(creates, new, region, context)
        if existing is None:
            existing = _pseudonymized(conn, organization_id, new, context)
        if existing is None:
            creates.append(_Create(len(results), uuid7(), arrival))
            results.append(None)
            continue
        reopened = reopen_returning(uow, organization_id, existing, new, None, arrival.via)
        if reopened is None:
            results.append(DuplicateLead(existing))
            continue
        if candidate is not None:  # the batch's next arrival of this person finds it reopened
            candidate.status, candidate.archived_at = reopened["status"], reopened.get("archived_at")
        record_receipt(
            conn, organization_id, existing.id, arrival.channel, arrival.received, duplicate=True,
            campaign_id=new.campaign_id,
        )  # fmt: skip
        results.append(Intake(reopened, IntakeOutcome.REOPENED))
    if creates:
        placement = default_new_stage(conn, organization_id, known=context.placement)
        creates, placed = _place(conn, organization_id, placement, context, creates)
        inserted = _insert_leads(uow, organization_id, placement, context, creates, placed)
        for create in creates:
            results[create.index] = Intake(inserted[create.lead_id], IntakeOutcome.CREATED)
    return [result for result in results if result is not None]


def _place(
    conn: Connection,
    organization_id: uuid.UUID,
    placement: StagePlacement,
    context: IntakeContext,
    creates: list[_Create],
) -> tuple[list[_Create], dict[uuid.UUID, Placed]]:
    """The owners the organization's assignment rules give the batch's unowned creates, chosen in one pass
    (leads.assignment.place_many: one lock of the rules, one read of the named staff, one cursor update);
    nothing at all when the organization has no rules."""
    unowned = [create for create in creates if create.arrival.new.assigned_to_user_id is None]
    if not unowned or not context.has_assignment_rules:
        return creates, {}
    traits = [
        lead_traits(
            source=c.arrival.new.source,
            campaign_id=c.arrival.new.campaign_id,
            pipeline_id=placement.pipeline_id,
            form_ref=c.arrival.new.form_ref,
            locale=c.arrival.new.locale,
            timezone=context.timezone,
        )
        for c in unowned
    ]
    chosen = {
        create.lead_id: placed
        for create, placed in zip(unowned, place_many(conn, organization_id, traits, context.timezone), strict=True)
        if placed is not None
    }
    placed_creates = [_owned(c, chosen[c.lead_id].user_id) if c.lead_id in chosen else c for c in creates]
    return placed_creates, chosen


def _owned(create: _Create, user_id: uuid.UUID) -> _Create:
    arrival = create.arrival
    return replace(create, arrival=replace(arrival, new=replace(arrival.new, assigned_to_user_id=user_id)))


def _pseudonymized(
    conn: Connection, organization_id: uuid.UUID, new: NewLead, context: IntakeContext
) -> ExistingLead | None:
    """A pseudonymized person of the organization whose tokens match (no statement when it has none)."""
    found = find_pseudonymized(conn, organization_id, new.email, new.phone, known=context.pseudonyms)
    if found is None:
        return None
    return ExistingLead(id=found.id, name=None, status=found.status, archived_at=None, suppressed=True)


def _earlier_create(
    creates: list[_Create], new: NewLead, region: str | None, context: IntakeContext
) -> ExistingLead | None:
    """The batch's first earlier create of the same person (as `find_same_person` would find it had it been
    committed): a new lead on the New stage, open, so a duplicate."""
    email_key, phone_key = normalized_email(new.email), _phone_key(new.phone)
    for create in creates:
        earlier = create.arrival.new
        if (email_key is not None and normalized_email(earlier.email) == email_key) or (
            phone_key is not None
            and _phone_key(earlier.phone) == phone_key
            and same_phone(new.phone, earlier.phone, region)
        ):
            status = context.placement.category.value if context.placement else "new"
            return ExistingLead(id=create.lead_id, name=earlier.name, status=status, archived_at=None)
    return None


def _phone_key(phone: str | None) -> str | None:
    """What two numbers that are the same share however they were typed (the dedup index's key)."""
    return last_seven_digits(phone) or phone_digits(phone)


def _insert_leads(
    uow: UnitOfWork,
    organization_id: uuid.UUID,
    placement: StagePlacement,
    context: IntakeContext,
    creates: list[_Create],
    placed: dict[uuid.UUID, Placed],
) -> dict[uuid.UUID, dict[str, Any]]:
    """Every create in one statement (see the module's docstring); each lead's row by its id."""
    rows, titles = [], {}
    for create in creates:
        new, arrival = create.arrival.new, create.arrival
        _add_created_event(uow, organization_id, create.lead_id, new, placement)
        titles[create.lead_id] = contact_task_title(new.name, new.email, new.phone)
        rows.append(
            {
                "id": create.lead_id,
                "name": new.name,
                "email": new.email,
                "phone": new.phone,
                "locale": new.locale,
                "note": new.note,
                "source": new.source,
                "is_test": new.is_test,
                "campaign_id": new.campaign_id,
                "assigned_to_user_id": new.assigned_to_user_id,
                "status_event_id": uuid7(),
                "receipt_id": uuid7(),
                "channel": arrival.channel,
                "received": arrival.received,
                **first_touch_row(
                    source=new.source,
                    campaign_id=new.campaign_id,
                    entry_channel=arrival.channel,
                    received=arrival.received,
                ),  # fmt: skip
            }
        )
    src = recordset("new_lead_rows", "new_lead_rows", rows, _ROW_COLUMNS)
    message = LeadsCreated(organization_id, context.timezone, titles, src.c.id)
    writes: list[CreationWrites] = [w for w in handle(uow.connection, message) if w is not None]
    if placed:  # each lead's timeline records the rule that placed it, in the same statement
        entries = [rule_activity_row(organization_id, lead_id, p) for lead_id, p in placed.items()]
        writes.append(CreationWrites(statements=(rule_activities(entries),)))
    values: dict[str, Any] = {
        "id": src.c.id,
        "organization_id": literal(organization_id, Uuid),
        **{name: src.c[name] for name in ("name", "email", "phone", "locale", "note", "source", "is_test")},
        "status": literal(placement.category.value, Text),
        "pipeline_id": literal(placement.pipeline_id, Uuid),
        "stage_id": literal(placement.stage_id, Uuid),
        "campaign_id": src.c.campaign_id,
        "assigned_to_user_id": src.c.assigned_to_user_id,
    }
    for written in writes:
        values.update(written.lead_values)
    new_leads = (
        insert(leads)
        .from_select(list(values), select(*values.values()).select_from(src))
        .returning(*LEAD_COLUMNS)
        .cte("new_leads")
    )
    joined = new_leads.join(src, src.c.id == new_leads.c.id)
    status_events = insert(lead_status_events).from_select(
        ["id", "organization_id", "lead_id", "from_status", "to_status", "to_stage_id", "actor_user_id", "changed_at"],
        select(
            src.c.status_event_id, new_leads.c.organization_id, new_leads.c.id, null(), new_leads.c.status,
            new_leads.c.stage_id, null(), new_leads.c.created_at,
        ).select_from(joined),
    )  # fmt: skip
    receipts = insert(lead_receipts).from_select(
        ["id", "organization_id", "lead_id", "channel", "duplicate", "payload", "received_at"],
        select(
            src.c.receipt_id, new_leads.c.organization_id, new_leads.c.id, src.c.channel, literal(False),
            src.c.received, new_leads.c.created_at,
        ).select_from(joined),
    )  # fmt: skip
    statement = select(new_leads).add_cte(
        status_events.cte("new_status_events"),
        receipts.cte("new_receipts"),
        first_touches_insert(new_leads, src).cte("new_first_touches"),
        *(cte for written in writes for cte in written.statements),
    )
    return {row["id"]: dict(row) for row in uow.execute_with_events(statement).mappings()}


def _add_created_event(
    uow: UnitOfWork, organization_id: uuid.UUID, lead_id: uuid.UUID, new: NewLead, placement: StagePlacement
) -> None:
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
                "actorUserId": None,
            },
        )
    )
