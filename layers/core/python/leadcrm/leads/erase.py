"""Erasing leads (owner/admin): the lead and everything that names it, in one transaction per lead.

Spec "Erasing a lead deletes its linked tasks" and the privacy rule "Customer requests data deletion":

1. The lead row is taken first (`lock_lead`), so an erase queues behind any write in flight on the lead.
2. Every task linked to it is hard-deleted before the lead row: tasks.linked_lead_id is ON DELETE NO ACTION
   on purpose (a task's title carries the lead's name, so it must go, not be unlinked).
3. The lead row is deleted; the database removes what hangs off it (every other foreign key to leads is
   ON DELETE CASCADE: status and timeline events, placements, tag assignments, receipts, consents; or
   SET NULL: memberships.source_lead_id). tests/integration/leads/test_erase_pii.py checks that no foreign key
   to leads other than tasks.linked_lead_id is left that would block or keep the lead.
4. What outlives the lead is made to forget it: stored Idempotency-Key answers that carry the lead (a staff
   create's answer is the whole lead, name and email included) are deleted, and so is a public capture's
   key, found through the fingerprint of the submission the lead's receipts kept, and the stored answers of
   duplicates merged into the lead (qualification.merges: the same person). Outbox payloads carry
   ids only (DESIGN.md), so they are left as the non-identifying history of what happened.
5. `lead.erased` {leadId, actorUserId} is the audit record: ids only.

Bulk erase runs the same steps for each lead in its own SAVEPOINT, in id order (two bulk erases over
overlapping leads queue instead of deadlocking), and reports each lead it could not erase. Log lines carry
ids and error classes only: a driver's message can quote row values.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, cast, delete, func, literal, select
from sqlalchemy.dialects.postgresql import JSONB, JSONPATH
from sqlalchemy.exc import DBAPIError

from leadcrm.directory.rules import Actor
from leadcrm.leads.messages import LeadErasing
from leadcrm.leads.moves import lock_lead
from leadcrm.leads.tables import lead_receipts, leads
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import NotFound
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.idempotency import request_fingerprint
from leadcrm.platform.messagebus import handle
from leadcrm.platform.tables import idempotency_keys

logger = logging.getLogger(__name__)

LEAD_ERASED = "lead.erased"
MAX_BULK_ERASE = 1000

# Per-lead failure reasons of a bulk erase.
NOT_FOUND_REASON = "LEAD_NOT_FOUND"
FAILED_REASON = "ERASE_FAILED"

# The idempotency scopes whose keys belong to an organization's lead creates (leads.intake, capture).
CAPTURE_SCOPE = "leads.capture:{organization_id}"


@dataclass(frozen=True)
class ErasedLead:
    lead_id: uuid.UUID
    tasks_deleted: int


@dataclass
class BulkEraseResult:
    erased: list[uuid.UUID] = field(default_factory=list)
    failed: list[tuple[uuid.UUID, str]] = field(default_factory=list)


def erase_lead(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID) -> ErasedLead:
    """Erases one lead of the actor's organization (404 LEAD_NOT_FOUND for any other id); the caller commits."""
    erased = _erase_one(uow.connection, actor.organization_id, lead_id)
    _forget_stored_answers(uow.connection, [lead_id])
    uow.add_event(_erased_event(actor, lead_id))
    logger.info(
        "lead erased",
        extra={
            "organizationId": str(actor.organization_id),
            "leadId": str(lead_id),
            "tasksDeleted": erased.tasks_deleted,
        },
    )
    return erased


def bulk_erase(uow: UnitOfWork, actor: Actor, lead_ids: Sequence[uuid.UUID]) -> BulkEraseResult:
    """Erases each lead in its own SAVEPOINT; a lead that fails is rolled back alone and reported."""
    result = BulkEraseResult()
    for lead_id in sorted(set(lead_ids)):
        try:
            with uow.connection.begin_nested():
                _erase_one(uow.connection, actor.organization_id, lead_id)
        except NotFound:
            result.failed.append((lead_id, NOT_FOUND_REASON))
        except DBAPIError as error:
            logger.error(
                "lead not erased",
                extra={
                    "organizationId": str(actor.organization_id),
                    "leadId": str(lead_id),
                    "errorType": type(error).__name__,
                },
            )
            result.failed.append((lead_id, FAILED_REASON))
        else:
            result.erased.append(lead_id)
            uow.add_event(_erased_event(actor, lead_id))
    _forget_stored_answers(uow.connection, result.erased)  # one scan for the whole request
    logger.info(
        "bulk erase done",
        extra={
            "organizationId": str(actor.organization_id),
            "erased": len(result.erased),
            "failed": len(result.failed),
        },
    )
    return result


def _erase_one(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> ErasedLead:
    """Steps 1 to 4 for one lead (the stored answers are forgotten once per request, by the caller)."""
    lock_lead(conn, organization_id, lead_id)
    _forget_capture_keys(conn, organization_id, lead_id)  # reads the receipts, which the lead takes with it
    # Duplicates merged into the lead were the same person: their stored answers go too (their tombstones
    # go with the lead).
    # Deals stay without the person's traces; linked tasks are deleted (see `leadcrm.wiring`).
    answers = [answer for answer in handle(conn, LeadErasing(organization_id, lead_id)) if answer is not None]
    _forget_stored_answers(conn, [same for answer in answers for same in answer.same_person_lead_ids])
    tasks_deleted = sum(answer.tasks_deleted for answer in answers)
    conn.execute(delete(leads).where(leads.c.organization_id == organization_id, leads.c.id == lead_id))
    return ErasedLead(lead_id=lead_id, tasks_deleted=tasks_deleted)


def _erased_event(actor: Actor, lead_id: uuid.UUID) -> DomainEvent:
    """The audit record of the erase: who erased which lead, ids only."""
    return DomainEvent(
        type=LEAD_ERASED,
        organization_id=actor.organization_id,
        aggregate_id=lead_id,
        payload={"leadId": str(lead_id), "actorUserId": str(actor.user_id) if actor.user_id else None},
    )


def _forget_stored_answers(conn: Connection, lead_ids: Sequence[uuid.UUID]) -> None:
    """Deletes stored Idempotency-Key answers that name an erased lead anywhere (its id as any string value:
    the created lead itself, or a task created for it). A replay of such a key then runs as a new request.
    The jsonpath comparison with `$ids[*]` is existential: any of the ids matches."""
    if not lead_ids:
        return
    conn.execute(
        delete(idempotency_keys).where(
            func.jsonb_path_exists(
                idempotency_keys.c.response_body,
                cast(literal("$.** ? (@ == $ids[*])"), JSONPATH),
                literal({"ids": [str(lead_id) for lead_id in lead_ids]}, JSONB),
            )
        )
    )


def _forget_capture_keys(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """A public capture's key answers the same body for everyone, so only its request fingerprint (a hash of
    what the visitor sent) leads back to the person: it is recomputed from the receipts the lead kept."""
    received = conn.execute(
        select(lead_receipts.c.payload).where(
            lead_receipts.c.organization_id == organization_id, lead_receipts.c.lead_id == lead_id
        )
    ).scalars()
    fingerprints = {request_fingerprint(payload) for payload in received if payload}
    if fingerprints:
        conn.execute(
            delete(idempotency_keys).where(
                idempotency_keys.c.scope == CAPTURE_SCOPE.format(organization_id=organization_id),
                idempotency_keys.c.request_hash.in_(fingerprints),
            )
        )


# Shared with the pseudonymized erasure (qualification.pseudonymize), which forgets the same stored answers.
forget_stored_answers = _forget_stored_answers
forget_capture_keys = _forget_capture_keys
