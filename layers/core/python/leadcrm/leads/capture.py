"""G1: a lead arrives through the organization's minisite (public, unauthenticated).

The public boundary (spec G1 step 2): campaignId is a staff-path field and is always dropped; campaignRef
is kept only for the minisite's own surfaces; a minisiteEventId counts only when it is an event of this
organization, and its campaign is resolved here, never taken from the caller. The source is minisite.

Nothing the caller can observe depends on what happened (no enumeration oracle): new lead, duplicate,
unknown organization, organization without lead management, replayed Idempotency-Key all end in the same
answer, which the API gives without asking this module anything.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select, update

from leadcrm.directory.rules import LEAD_MANAGEMENT, enabled_features
from leadcrm.directory.tables import organizations
from leadcrm.leads.activity import record_activity
from leadcrm.leads.campaigns import find_or_create_campaign
from leadcrm.leads.dedup import open_intake
from leadcrm.leads.intake import DuplicateLead, NewLead, intake_lead, record_receipt
from leadcrm.leads.rules.intake import (
    MINISITE_CHANNEL,
    MINISITE_EVENT_CHANNEL,
    PUBLIC_CAMPAIGN_REFS,
    accepted_campaign_ref,
)
from leadcrm.leads.rules.returning import ReturnVia
from leadcrm.leads.tables import minisite_events
from leadcrm.platform import idempotency
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork

logger = logging.getLogger(__name__)

MINISITE_SOURCE = "minisite"
RESUBMITTED_ACTIVITY = "resubmitted"
# The one answer of the public endpoint, also what an Idempotency-Key stores.
RECEIVED_STATUS = 201
RECEIVED_BODY: dict[str, Any] = {"data": {"received": True}}


@dataclass(frozen=True)
class PublicSubmission:
    """What a visitor sent, validated. `received` is the body as sent (kept on the receipt, and the
    Idempotency-Key fingerprint), including fields the boundary drops."""

    received: dict[str, Any]
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    locale: str | None = None
    note: str | None = None
    campaign_ref: str | None = None
    minisite_event_id: uuid.UUID | None = None


def capture_lead(
    uow: UnitOfWork,
    organization_id: uuid.UUID | None,
    submission: PublicSubmission,
    *,
    idempotency_key: str | None = None,
) -> None:
    """Take in a public submission; the caller commits. Writes nothing for an organization that does not
    exist or has no lead management (None: the path's id was not even a UUID)."""
    conn = uow.connection
    if organization_id is None:
        return
    context = None
    if idempotency_key is None and not _names_a_campaign(submission):
        # Nothing runs between the feature check and the person lock: one statement for both (and for what
        # the create reads of the organization). An organization without lead management took a lock for
        # nothing, released when this unit ends.
        context = open_intake(conn, organization_id, submission.email, submission.phone)
        if context is None or LEAD_MANAGEMENT not in enabled_features(context.features):
            return
    elif not _accepts_public_leads(conn, organization_id):
        return
    scope = f"leads.capture:{organization_id}"
    if idempotency_key is not None:
        fingerprint = idempotency.request_fingerprint(submission.received)
        if idempotency.claim(conn, scope, idempotency_key, fingerprint) is not None:
            return  # a replay: the first request's work stands, and its answer is the same one
    campaign_id = _resolve_campaign(conn, organization_id, submission)
    new = NewLead(
        name=submission.name,
        email=submission.email,
        phone=submission.phone,
        locale=submission.locale,
        note=submission.note,
        source=MINISITE_SOURCE,
        campaign_id=campaign_id,
    )
    try:
        # A closed lead of this person is reopened here (spec "Returning leads"); an open one is a duplicate.
        intake_lead(
            uow,
            organization_id,
            new,
            actor_user_id=None,
            channel=MINISITE_CHANNEL,
            received=submission.received,
            via=ReturnVia.PUBLIC_CAPTURE,
            context=context,
        )
    except DuplicateLead as duplicate:
        if duplicate.existing.suppressed:  # a pseudonymized person: nothing of the submission is kept
            return
        _record_resubmission(conn, organization_id, duplicate.existing.id, submission, campaign_id)
    if idempotency_key is not None:
        idempotency.remember(conn, scope, idempotency_key, idempotency.StoredResponse(RECEIVED_STATUS, RECEIVED_BODY))


def _accepts_public_leads(conn: Connection, organization_id: uuid.UUID) -> bool:
    features = conn.execute(
        select(organizations.c.features).where(organizations.c.id == organization_id)
    ).scalar_one_or_none()
    return LEAD_MANAGEMENT in enabled_features(features)


def _names_a_campaign(submission: PublicSubmission) -> bool:
    """Whether the submission may resolve a campaign (written before the person lock is taken)."""
    return submission.minisite_event_id is not None or accepted_campaign_ref(submission.campaign_ref) is not None


def _resolve_campaign(conn: Connection, organization_id: uuid.UUID, submission: PublicSubmission) -> uuid.UUID | None:
    """The event's campaign when the submission names an event of this organization (the most specific
    attribution), else the hook of an accepted campaignRef, else none."""
    if submission.minisite_event_id is not None:
        event_campaign = _minisite_event_campaign(conn, organization_id, submission.minisite_event_id)
        if event_campaign is not None:
            return event_campaign
    ref = accepted_campaign_ref(submission.campaign_ref)
    if ref is None:
        return None
    return find_or_create_campaign(conn, organization_id, MINISITE_CHANNEL, ref, PUBLIC_CAMPAIGN_REFS[ref])


def _minisite_event_campaign(conn: Connection, organization_id: uuid.UUID, event_id: uuid.UUID) -> uuid.UUID | None:
    """The campaign of this organization's event, minted (and stored on the event) on first use. None for an
    id that is not an event of this organization: ignored silently, like a random id."""
    event = conn.execute(
        select(minisite_events.c.title, minisite_events.c.campaign_id).where(
            minisite_events.c.organization_id == organization_id, minisite_events.c.id == event_id
        )
    ).first()
    if event is None:
        return None
    if event.campaign_id is not None:
        return event.campaign_id
    campaign_id = find_or_create_campaign(
        conn, organization_id, MINISITE_EVENT_CHANNEL, str(event_id), event.title or "Minisite event"
    )
    # Concurrent first submissions mint the same hook (conflict-safe), so whichever update lands is the same.
    conn.execute(
        update(minisite_events)
        .where(minisite_events.c.id == event_id, minisite_events.c.campaign_id.is_(None))
        .values(campaign_id=campaign_id, updated_at=sql_now())
    )
    return campaign_id


def _record_resubmission(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    submission: PublicSubmission,
    campaign_id: uuid.UUID | None,
) -> None:
    """The person came back while their lead is open (or won): their words are kept on a duplicate receipt,
    and staff see it on the timeline. A closed lead was reopened by `intake_lead` instead."""
    receipt_id = record_receipt(
        conn, organization_id, lead_id, MINISITE_CHANNEL, submission.received, duplicate=True, campaign_id=campaign_id
    )
    record_activity(
        conn,
        organization_id,
        lead_id,
        RESUBMITTED_ACTIVITY,
        {
            "channel": MINISITE_CHANNEL,
            "receiptId": str(receipt_id),
            "campaignId": str(campaign_id) if campaign_id else None,
        },
    )
