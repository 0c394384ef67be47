"""The platform's released joins (`membership.join_released`): a person who started joining and stopped is
found as a lead or made one, through the returning-leads seam (leads.returning) or intake (leads.intake)."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import LEAD_MANAGEMENT, enabled_features
from leadcrm.directory.tables import organizations
from leadcrm.leads.dedup import lock_person
from leadcrm.leads.identity import find_lead_for_person, organization_region, person_for_user
from leadcrm.leads.intake import NewLead, intake_lead
from leadcrm.leads.returning import return_lead

# The move machinery every primary move shares (PATCH, set-primary, bulk moves): the same row values,
# status event, stage_moved payload and lead.status_changed, so a reopen's history reads like any move.
from leadcrm.leads.rules.returning import (
    JOIN_RELEASED_NOTE,
    JOIN_RELEASED_SOURCE,
    SIGNUP_RELEASED_ACTIVITY,
    JoinRelease,
    ReturnTouch,
    ReturnVia,
    parse_join_release,
)
from leadcrm.leads.tables import lead_activity_events
from leadcrm.platform.db.consumer_uow import ConsumerUnitOfWork
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)


def handle_join_released(conn: Connection, detail: dict[str, Any]) -> bool:
    """task_lifecycle handler for `membership.join_released` (platform detail {organizationId, userId,
    membershipId?, releasedAt?}); True when it changed something. Malformed details are acknowledged and
    dropped: a retry could never make them valid."""
    release = parse_join_release(detail)
    if release is None:
        logger.warning("membership.join_released without valid ids dropped")
        return False
    uow = ConsumerUnitOfWork(conn)
    lead_id = release_join(uow, release)
    uow.write_events()
    return lead_id is not None


def release_join(uow: UnitOfWork, release: JoinRelease) -> uuid.UUID | None:
    """A released join is a recovered signup, not a cold lead (spec): the person's lead is reopened, or a
    lead is created for them, either marked `recoveredSignup: true` on its lead.status_changed /
    lead.created. Returns the lead the release was recorded on, or None when nothing was written.

    - The lead is found by person (`leads.identity.find_lead_for_person`: equal email, or equal phone
      with agreeing names), never by a bare field; unknown and managed users are nobody's lead.
    - A closed lead is reopened through `return_lead` (via join_released; the note gets the release
      sentence unless it already ends with it). An open lead is left as it is, a won lead too.
    - No lead: one is created through the shared create path (source self_signup), without the field dedup
      (a shared family phone is not the same person).
    - Each release is recorded once on the lead's timeline (`signup_released`, keyed by the release), and a
      release already recorded changes nothing: replays are no-ops even for a lead the person match cannot
      find again. Concurrent deliveries queue on the person's advisory locks.
    """
    conn = uow.connection
    organization_id = release.organization_id
    if not _takes_leads(conn, organization_id):
        return None
    region = organization_region(conn, organization_id)
    person = person_for_user(conn, release.user_id, default_region=region)
    if person is None or (person.key.email is None and person.key.phone_e164 is None):
        return None  # unknown or managed user, or nobody we could find or call again
    key = person.key
    lock_person(conn, organization_id, key.email, key.phone_e164)
    if _release_recorded(conn, release):
        return None
    lead_id = find_lead_for_person(conn, organization_id, key, default_region=region, user_id=release.user_id)
    touch = ReturnTouch(note=JOIN_RELEASED_NOTE, name=key.name, email=key.email, phone=key.phone_e164)
    outcome: str
    if lead_id is not None:
        returned = return_lead(
            uow,
            organization_id,
            lead_id,
            via=ReturnVia.JOIN_RELEASED,
            actor_user_id=None,
            touch=touch,
            recovered_signup=True,
        )
        outcome = returned.kind.value
    else:
        intake = intake_lead(
            uow,
            organization_id,
            NewLead(
                name=key.name,
                email=key.email,
                phone=key.phone_e164,
                note=JOIN_RELEASED_NOTE,
                source=JOIN_RELEASED_SOURCE,
            ),
            actor_user_id=None,
            channel=ReturnVia.JOIN_RELEASED.value,
            received=_release_receipt(release),
            dedup=False,
            recovered_signup=True,
        )
        lead_id, outcome = intake.lead["id"], "created"
    _record_release(conn, release, lead_id, outcome)
    logger.info("join release recorded", extra={"leadId": str(lead_id), "outcome": outcome})
    return lead_id


def _takes_leads(conn: Connection, organization_id: uuid.UUID) -> bool:
    """The organization exists and has lead management (like the public capture: otherwise no lead in)."""
    features = conn.execute(
        select(organizations.c.features).where(organizations.c.id == organization_id)
    ).scalar_one_or_none()
    return LEAD_MANAGEMENT in enabled_features(features)


def _release_receipt(release: JoinRelease) -> dict[str, Any]:
    """What the platform sent, ids only."""
    return {
        "userId": str(release.user_id),
        "membershipId": str(release.membership_id) if release.membership_id else None,
        "releasedAt": release.released_at.isoformat() if release.released_at else None,
    }


def _release_recorded(conn: Connection, release: JoinRelease) -> bool:
    return (
        conn.execute(
            select(lead_activity_events.c.id).where(
                lead_activity_events.c.source_event_id == release.key,
                lead_activity_events.c.type == SIGNUP_RELEASED_ACTIVITY,
            )
        ).first()
        is not None
    )


def _record_release(conn: Connection, release: JoinRelease, lead_id: uuid.UUID, outcome: str) -> None:
    """The release on the lead's timeline, once per release key. Not best-effort: it is what makes a replay
    a no-op, so it commits with the rest or not at all."""
    conn.execute(
        pg_insert(lead_activity_events)
        .values(
            id=uuid7(),
            organization_id=release.organization_id,
            lead_id=lead_id,
            type=SIGNUP_RELEASED_ACTIVITY,
            payload={**_release_receipt(release), "outcome": outcome},
            source_event_id=release.key,
        )
        .on_conflict_do_nothing(
            index_elements=["source_event_id", "type"], index_where=lead_activity_events.c.source_event_id.isnot(None)
        )
    )
