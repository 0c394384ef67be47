"""Pseudonymized erasure (spec 8, "Customer requests data deletion: pseudonymize or anonymize records per
privacy policy; transactional history retained in non-identifiable form"). Owner/admin; the alternative to
the hard erase of leads.erase.

One unit of work, under the lead's lock:
1. Tokens of the canonical email and phone (leads.rules.pseudonyms, the per-organization keyed HMAC) go to
   lead_pseudonyms: dedup still recognizes the person (an entry point's submission is suppressed, a staff
   create answers 409 DUPLICATE_LEAD) and analytics still count one lead, while the person's details
   cannot be read back.
2. The lead's personal columns are cleared (name, email, phone, note, locale, the follow-up note, BANT
   evidence); the lead is archived (out of the queue and default lists) and its follow-up cleared.
3. Every table with a foreign key to leads is handled by the decision in `TABLE_POLICIES`: status events,
   consents, placements and tag assignments keep their codes and ids; receipts lose what was sent;
   timeline payloads lose their free-text keys; task titles become neutral and open tasks are cancelled;
   enrichments are deleted; a merge's undo snapshot is dropped. tests/integration/qualification/test_merge_policies.py
   fails for a table with a foreign key to leads and a text or JSON column that has no decision here.
4. Stored Idempotency-Key answers that carry the lead and the capture keys of its submissions are
   forgotten (as the hard erase does), and `lead.pseudonymized` (ids only) records who did it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import ARRAY, Connection, Text, cast, delete, func, insert, literal, select, update
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.conversations.tables import (
    bulk_email_recipients,
    conversation_messages,
    conversations,
    lead_consent_events,
    lead_consents,
)
from leadcrm.deals.people import forget_erased_lead
from leadcrm.deals.tables import deals
from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import memberships
from leadcrm.ingestion.tables import ingested_events, lead_attributions, meta_crm_events
from leadcrm.leads.activity import record_activity
from leadcrm.leads.erase import forget_capture_keys, forget_stored_answers
from leadcrm.leads.identity import organization_region
from leadcrm.leads.moves import lock_lead
from leadcrm.leads.pseudonym_tokens import person_tokens
from leadcrm.leads.tables import (
    lead_activity_events,
    lead_pipeline_placements,
    lead_pseudonyms,
    lead_receipts,
    lead_status_events,
    lead_tag_assignments,
    lead_touches,
    leads,
)
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError, Conflict
from leadcrm.platform.events import DomainEvent
from leadcrm.qualification.merge_policies import lead_references
from leadcrm.qualification.queries import merged_lead_ids
from leadcrm.qualification.tables import lead_enrichments, lead_merges
from leadcrm.tickets.tables import tickets
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

LEAD_PSEUDONYMIZED = "lead.pseudonymized"
PSEUDONYMIZED_ACTIVITY = "lead_pseudonymized"
NEUTRAL_TASK_TITLE = "Contact lead"
# Timeline payload keys that may carry someone's words or details; ids, codes and instants stay.
FREE_TEXT_KEYS = ("note", "name", "email", "phone", "title", "text", "body", "message", "subject", "evidence")


class PseudonymizationNotConfigured(AppError):
    status, code = 503, "PSEUDONYMIZATION_NOT_CONFIGURED"


Scrub = Callable[[Connection, uuid.UUID, uuid.UUID], object]


def _keep(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """Codes, statuses and ids only: nothing identifies the person."""


def _scrub_receipts(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """The receipt stays (when and through which channel the lead arrived); what was sent goes."""
    conn.execute(
        update(lead_receipts)
        .where(lead_receipts.c.organization_id == organization_id, lead_receipts.c.lead_id == lead_id)
        .values(payload={})
    )


def _scrub_timeline(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    free_text = cast(literal("{" + ",".join(FREE_TEXT_KEYS) + "}"), ARRAY(Text))
    conn.execute(
        update(lead_activity_events)
        .where(lead_activity_events.c.organization_id == organization_id, lead_activity_events.c.lead_id == lead_id)
        .values(payload=lead_activity_events.c.payload.op("-")(free_text))
    )


def _scrub_tasks(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """Task titles carry the lead's name: they become neutral. Nobody is to contact an erased person, so
    open tasks are cancelled; done ones stay as the history of the work."""
    scope = (tasks.c.organization_id == organization_id, tasks.c.linked_lead_id == lead_id)
    conn.execute(
        update(tasks)
        .where(*scope, tasks.c.status.in_(("pending", "in_progress")))
        .values(status="cancelled", cancelled_at=sql_now())
    )
    conn.execute(update(tasks).where(*scope).values(title=NEUTRAL_TASK_TITLE, description=None, updated_at=sql_now()))


def _delete_enrichments(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """Enriched values describe the person (job title, company, age band): they go."""
    conn.execute(
        delete(lead_enrichments).where(
            lead_enrichments.c.organization_id == organization_id, lead_enrichments.c.lead_id == lead_id
        )
    )


def _delete_crm_events(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """The CRM events built for Meta carry the leadgen id and, where allowed, hashed email and phone: they go,
    and one not yet handed to the sender is never sent (the hand-off finds no row)."""
    conn.execute(
        delete(meta_crm_events).where(
            meta_crm_events.c.organization_id == organization_id, meta_crm_events.c.lead_id == lead_id
        )
    )


def _delete_tickets(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """A ticket's subject, description, messages and mails are the person's own words: the lead's tickets
    go (with their events, messages and mails), as the hard erase does. SLA reports no longer count them."""
    conn.execute(delete(tickets).where(tickets.c.organization_id == organization_id, tickets.c.lead_id == lead_id))


def _scrub_conversations(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """Threads and messages stay (how many, when, which way, delivered or not); what was written and the
    addresses go."""
    threads = select(conversations.c.id).where(
        conversations.c.organization_id == organization_id, conversations.c.lead_id == lead_id
    )
    conn.execute(
        update(conversation_messages)
        .where(
            conversation_messages.c.organization_id == organization_id,
            conversation_messages.c.conversation_id.in_(threads),
        )
        .values(body="", subject=None, from_address=None, to_address=None, error=None)
    )
    conn.execute(
        update(conversations)
        .where(conversations.c.organization_id == organization_id, conversations.c.lead_id == lead_id)
        .values(subject=None, updated_at=sql_now())
    )


def _drop_consent_notes(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """The consent ledger keeps every grant and revocation (channel, status, legal basis, source, when), but
    not the free-text notes. The ledger refuses UPDATE, so an entry with a note is written again without it
    (same id and time): a deletion the erasure is entitled to, not an edit of what was consented."""
    ledger = lead_consent_events
    noted = (
        conn.execute(
            delete(ledger)
            .where(ledger.c.organization_id == organization_id, ledger.c.lead_id == lead_id, ledger.c.note.is_not(None))
            .returning(*(c for c in ledger.columns if c.name != "note"))
        )
        .mappings()
        .all()
    )
    if noted:
        conn.execute(insert(ledger), [dict(row) for row in noted])


def _drop_merge_snapshots(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """A merge's undo snapshot holds the merged lead's details: dropped (the merge can no longer be undone)."""
    conn.execute(
        update(lead_merges)
        .where(lead_merges.c.organization_id == organization_id, lead_merges.c.survivor_lead_id == lead_id)
        .values(snapshot=None)
    )


# table name → what pseudonymization does to the lead's rows there.
TABLE_POLICIES: dict[str, Scrub] = {
    lead_receipts.name: _scrub_receipts,
    lead_activity_events.name: _scrub_timeline,
    tasks.name: _scrub_tasks,
    lead_enrichments.name: _delete_enrichments,
    lead_merges.name: _drop_merge_snapshots,
    lead_status_events.name: _keep,
    lead_consents.name: _keep,
    lead_pipeline_placements.name: _keep,
    lead_tag_assignments.name: _keep,
    memberships.name: _keep,  # the member's own record; source_lead_id is an id
    lead_pseudonyms.name: _keep,
    # The natural keys of webhook deliveries (Meta's ids), kept so an old redelivery cannot bring the person
    # back; and which ad, form and campaign brought the lead: the organization's marketing, not the person.
    ingested_events.name: _keep,
    lead_attributions.name: _keep,
    meta_crm_events.name: _delete_crm_events,  # the leadgen id and hashes identify the person at Meta
    lead_touches.name: _keep,  # kinds, channels, campaigns, UTM parameters and ids: the marketing, not the person
    # Deals stay as figures, dates, stages and codes; their free text goes (the deals area's own rule).
    deals.name: forget_erased_lead,
    tickets.name: _delete_tickets,
    conversations.name: _scrub_conversations,
    lead_consent_events.name: _drop_consent_notes,
    bulk_email_recipients.name: _keep,  # statuses, codes and the provider's ids
}


def pseudonymize_lead(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID) -> dict[str, Any]:
    """Pseudonymizes one lead of the actor's organization (404 otherwise); the caller commits."""
    conn = uow.connection
    org = actor.organization_id
    lead = lock_lead(conn, org, lead_id)
    done = conn.execute(
        select(lead_pseudonyms.c.lead_id).where(
            lead_pseudonyms.c.organization_id == org, lead_pseudonyms.c.lead_id == lead_id
        )
    ).first()
    if done is not None:
        raise Conflict("This lead is already pseudonymized.", code="ALREADY_PSEUDONYMIZED")
    tokens = person_tokens(org, lead["email"], lead["phone"], organization_region(conn, org))
    if tokens is None:
        raise PseudonymizationNotConfigured("Pseudonymization has no key configured.")
    forget_capture_keys(conn, org, lead_id)  # reads the receipts before they are scrubbed
    merged = merged_lead_ids(conn, org, lead_id)
    for table in sorted({reference.table.name for reference in lead_references()}):
        TABLE_POLICIES.get(table, _keep)(conn, org, lead_id)
    row = conn.execute(
        update(leads)
        .where(leads.c.id == lead_id, leads.c.organization_id == org)
        .values(
            name=None,
            email=None,
            phone=None,
            note=None,
            locale=None,
            next_action_at=None,
            next_action_type=None,
            next_action_note=None,
            qualification_criteria=_without_evidence(lead_id, conn),
            archived_at=func.coalesce(leads.c.archived_at, sql_now()),
            updated_at=sql_now(),
        )
        .returning(leads.c.updated_at)
    ).one()
    conn.execute(
        lead_pseudonyms.insert().values(
            lead_id=lead_id, organization_id=org, email_token=tokens.email, phone_token=tokens.phone,
            actor_user_id=actor.user_id,
        )
    )  # fmt: skip
    forget_stored_answers(conn, [lead_id, *merged])
    record_activity(conn, org, lead_id, PSEUDONYMIZED_ACTIVITY, {}, actor_user_id=actor.user_id)
    uow.add_event(
        DomainEvent(
            type=LEAD_PSEUDONYMIZED,
            organization_id=org,
            aggregate_id=lead_id,
            payload={"leadId": str(lead_id), "actorUserId": str(actor.user_id) if actor.user_id else None},
        )
    )
    logger.info("lead pseudonymized", extra={"organizationId": str(org), "leadId": str(lead_id)})
    return {"lead_id": lead_id, "pseudonymized_at": row.updated_at}


def _without_evidence(lead_id: uuid.UUID, conn: Connection) -> Any:
    """BANT answers keep their statuses; the evidence (staff's notes about the person) goes."""
    criteria = conn.execute(select(leads.c.qualification_criteria).where(leads.c.id == lead_id)).scalar_one() or {}
    kept = {
        name: {"status": answer.get("status"), "recordedAt": answer.get("recordedAt")}
        for name, answer in criteria.items()
        if isinstance(answer, dict)
    }
    return cast(literal(kept, JSONB), JSONB)
