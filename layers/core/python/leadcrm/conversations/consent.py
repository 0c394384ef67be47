"""A lead's consent per channel (email, sms, whatsapp, call): an append-only ledger and its current state.

- `lead_consent_events` is the ledger: every grant and revocation with its legal basis, source (staff,
  call_outcome_dnc, unsubscribe_link, list_unsubscribe, ses_bounce, ses_complaint, …) and actor. A
  Permanent bounce or a complaint SES reports is a revocation with the basis `bounce` / `complaint`
  (conversations.delivery). Rows are never updated (a trigger
  refuses it); an erase deletes them with the lead.
- `lead_consents` is the current state, one row per lead and channel, written in the same transaction as
  the ledger row by `record_changes`, the only writer. No row means nothing was said: the channel is
  allowed (the gate blocks only a revocation).

Sends on consent-gated channels ask `is_allowed` before the outbound insert (spec "1:1 sends respect the
contact's gate"); a `dnc` call outcome revokes every channel (`revoke_all`); a bulk mail's unsubscribe
revokes email; staff grant or revoke through the consent API, audited by the ledger (actor) and the lead's
timeline (`consent_changed`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.conversations.tables import lead_consent_events, lead_consents
from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activity
from leadcrm.leads.moves import lock_lead
from leadcrm.leads.tables import leads
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import NotFound
from leadcrm.platform.ids import uuid7


class ConsentChannel(StrEnum):
    EMAIL = "email"
    SMS = "sms"
    WHATSAPP = "whatsapp"
    CALL = "call"


class ConsentStatus(StrEnum):
    GRANTED = "granted"
    REVOKED = "revoked"


class LegalBasis(StrEnum):
    """What staff may name: the basis of a grant (or a revocation)."""

    CONSENT = "consent"
    LEGITIMATE_INTEREST = "legitimate_interest"
    CONTRACT = "contract"
    LEGAL_OBLIGATION = "legal_obligation"


class SuppressionBasis(StrEnum):
    """Why SES's news revoked email (conversations.delivery): never chosen by staff, so never in the API's
    input, but shown in the ledger like any basis."""

    BOUNCE = "bounce"
    COMPLAINT = "complaint"


GRANTED = ConsentStatus.GRANTED.value
REVOKED = ConsentStatus.REVOKED.value
STAFF_SOURCE = "staff"
CONSENT_CHANGED = "consent_changed"
HISTORY_LIMIT = 100


@dataclass(frozen=True)
class ConsentChange:
    channel: ConsentChannel
    status: ConsentStatus
    source: str
    legal_basis: LegalBasis | SuppressionBasis | None = None  # required for a grant (the ledger's CHECK)
    note: str | None = None


def is_allowed(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, channel: ConsentChannel | str) -> bool:
    """False only when the lead's consent on the channel is revoked."""
    status = conn.execute(
        select(lead_consents.c.status).where(
            lead_consents.c.organization_id == organization_id,
            lead_consents.c.lead_id == lead_id,
            lead_consents.c.channel == ConsentChannel(channel).value,
        )
    ).scalar_one_or_none()
    return status != REVOKED


def record_changes(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    changes: Sequence[ConsentChange],
    actor_user_id: uuid.UUID | None = None,
) -> None:
    """Ledger rows and the current state for them, two statements whatever the number of channels."""
    if not changes:
        return
    conn.execute(
        insert(lead_consent_events),
        [
            {
                "id": uuid7(),
                "organization_id": organization_id,
                "lead_id": lead_id,
                "channel": change.channel.value,
                "status": change.status.value,
                "legal_basis": change.legal_basis.value if change.legal_basis else None,
                "source": change.source,
                "actor_user_id": actor_user_id,
                "note": change.note,
            }
            for change in changes
        ],
    )
    statement = pg_insert(lead_consents).values(
        [
            {
                "id": uuid7(),
                "organization_id": organization_id,
                "lead_id": lead_id,
                "channel": change.channel.value,
                "status": change.status.value,
                "source": change.source,
                "legal_basis": change.legal_basis.value if change.legal_basis else None,
            }
            for change in changes
        ]
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["lead_id", "channel"],
            set_={
                "status": statement.excluded.status,
                "source": statement.excluded.source,
                "legal_basis": statement.excluded.legal_basis,
                "updated_at": sql_now(),
            },
        )
    )


def revoke_all(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    *,
    source: str,
    actor_user_id: uuid.UUID | None = None,
) -> None:
    """Revokes consent on every channel (a do-not-contact request); each call is a ledger entry."""
    changes = [ConsentChange(channel=c, status=ConsentStatus.REVOKED, source=source) for c in ConsentChannel]
    record_changes(conn, organization_id, lead_id, changes, actor_user_id)


def revoke_if_allowed(
    conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, channel: ConsentChannel, *, source: str
) -> bool:
    """Revokes one channel unless it already is (an unsubscribe clicked twice is one ledger entry); True
    when this call revoked it."""
    if not is_allowed(conn, organization_id, lead_id, channel):
        return False
    record_changes(conn, organization_id, lead_id, [ConsentChange(channel, ConsentStatus.REVOKED, source)])
    return True


# -- the consent API's use cases --------------------------------------------------------------------------


def require_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    """404 LEAD_NOT_FOUND unless the lead is in the organization (another organization's answers the same)."""
    query = select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    if conn.execute(query).first() is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")


def consent_view(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """Each channel's current state (allowed unless revoked) and the ledger, newest first (last 100)."""
    require_lead(conn, organization_id, lead_id)
    current = {
        row.channel: row
        for row in conn.execute(
            select(lead_consents).where(
                lead_consents.c.organization_id == organization_id, lead_consents.c.lead_id == lead_id
            )
        )
    }
    channels = []
    for channel in ConsentChannel:
        row = current.get(channel.value)
        channels.append(
            {
                "channel": channel.value,
                "status": row.status if row else None,
                "allowed": row is None or row.status != REVOKED,
                "legal_basis": row.legal_basis if row else None,
                "source": row.source if row else None,
                "updated_at": row.updated_at if row else None,
            }
        )
    history = [
        dict(r)
        for r in conn.execute(
            select(lead_consent_events)
            .where(lead_consent_events.c.organization_id == organization_id, lead_consent_events.c.lead_id == lead_id)
            .order_by(lead_consent_events.c.occurred_at.desc(), lead_consent_events.c.id.desc())
            .limit(HISTORY_LIMIT)
        ).mappings()
    ]
    return {"lead_id": lead_id, "channels": channels, "history": history}


def set_consent(conn: Connection, actor: Actor, lead_id: uuid.UUID, change: ConsentChange) -> dict[str, Any]:
    """A staff grant or revocation: the ledger row names the actor, the timeline says who changed what."""
    lock_lead(conn, actor.organization_id, lead_id)  # 404 for another organization's lead
    record_changes(conn, actor.organization_id, lead_id, [change], actor.user_id)
    record_activity(
        conn,
        actor.organization_id,
        lead_id,
        CONSENT_CHANGED,
        {
            "channel": change.channel.value,
            "status": change.status.value,
            "legalBasis": change.legal_basis.value if change.legal_basis else None,
            "source": change.source,
        },
        actor.user_id,
    )
    return consent_view(conn, actor.organization_id, lead_id)
