"""What the leads capability does when an event arrives from the bus (at least once, in any order): the
`lead_created` timeline entry, the platform's minisite events a public capture is checked against, a member's
self-signup (attached to its lead) and a course purchase (leads.purchases).

Two shapes arrive (leadcrm.wiring routes them). Our own events (source `leadcrm`) carry the outbox envelope
as `detail`: eventId, type, organizationId, aggregateId, payload. Platform events (source `platform.*`, e.g.
minisite events) carry
the platform's own detail, with no eventId/payload wrapper: each handler reads the shape of its type.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import Connection, DateTime, Text, Uuid, and_, cast, func, literal, null, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.held import held_until_membership_active
from leadcrm.directory.tables import organizations
from leadcrm.leads.conversion import attach_on_self_signup
from leadcrm.leads.purchases import MAX_COURSE_NAME, CoursePurchase, record_course_purchase
from leadcrm.leads.tables import lead_activity_events, leads, minisite_events
from leadcrm.platform.db.consumer_uow import ConsumerUnitOfWork
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.ids import parse_uuid, uuid7

logger = logging.getLogger(__name__)

LEAD_CREATED_ACTIVITY = "lead_created"


def record_lead_created(conn: Connection, detail: dict[str, Any]) -> bool:
    """Write `lead_created` on the lead's timeline once per event id, however often it is delivered."""
    organization_id = uuid.UUID(detail["organizationId"])
    lead_id = uuid.UUID(detail["payload"]["leadId"])
    exists = conn.execute(
        select(leads.c.id).where(leads.c.id == lead_id, leads.c.organization_id == organization_id)
    ).first()
    if exists is None:  # erased before the event arrived: nothing to record
        return False
    inserted = conn.execute(
        pg_insert(lead_activity_events)
        .values(
            id=uuid7(),
            organization_id=organization_id,
            lead_id=lead_id,
            type=LEAD_CREATED_ACTIVITY,
            payload={"source": detail["payload"].get("source"), "eventId": detail["eventId"]},
            source_event_id=uuid.UUID(detail["eventId"]),
        )
        .on_conflict_do_nothing(
            index_elements=["source_event_id", "type"], index_where=lead_activity_events.c.source_event_id.isnot(None)
        )
        .returning(lead_activity_events.c.id)
    ).first()
    return inserted is not None


# --- platform: minisite events ----------------------------------------------------------------------------

MINISITE_EVENT_PUBLISHED = "minisite_event.published"
MINISITE_EVENT_UPDATED = "minisite_event.updated"
MINISITE_EVENT_ARCHIVED = "minisite_event.archived"
MAX_MINISITE_EVENT_TITLE = 500


def _upsert_minisite_event(conn: Connection, detail: dict[str, Any], *, archive: bool) -> bool:
    """Keep the organization's minisite events (what a public capture's minisiteEventId is checked against).

    Platform detail: {organizationId, eventId, title}. Idempotent upsert keyed by the event id; a redelivery
    or a late `updated` changes nothing it should not: the title follows the latest delivery, an archive
    keeps its first time, and no delivery moves an event to another organization. Malformed details and
    unknown organizations are acknowledged and dropped (a retry could never make them valid).
    """
    organization_id = parse_uuid(str(detail.get("organizationId", "")))
    event_id = parse_uuid(str(detail.get("eventId", "")))
    title = str(detail.get("title") or "").strip()[:MAX_MINISITE_EVENT_TITLE] or "Minisite event"
    if organization_id is None or event_id is None:
        logger.warning("minisite event without valid ids dropped")
        return False
    known_organization = select(organizations.c.id).where(organizations.c.id == organization_id).exists()
    values = select(
        literal(event_id, Uuid),
        literal(organization_id, Uuid),
        literal(title, Text),
        sql_now() if archive else cast(null(), DateTime(timezone=True)),
    ).where(known_organization)
    statement = pg_insert(minisite_events).from_select(["id", "organization_id", "title", "archived_at"], values)
    changes: dict[str, Any] = {"title": statement.excluded.title, "updated_at": sql_now()}
    # A redelivery that would change nothing writes nothing (updated_at stays the first delivery's).
    changed = minisite_events.c.title.is_distinct_from(statement.excluded.title)
    if archive:
        changes["archived_at"] = func.coalesce(minisite_events.c.archived_at, sql_now())
        changed = or_(changed, minisite_events.c.archived_at.is_(None))
    written = conn.execute(
        statement.on_conflict_do_update(
            index_elements=["id"],
            set_=changes,
            where=and_(minisite_events.c.organization_id == statement.excluded.organization_id, changed),
        ).returning(minisite_events.c.id)
    ).first()
    if written is None and not _is_organizations_minisite_event(conn, organization_id, event_id):
        logger.warning("minisite event dropped: unknown organization or not its event", extra={"id": str(event_id)})
    return written is not None


def _is_organizations_minisite_event(conn: Connection, organization_id: uuid.UUID, event_id: uuid.UUID) -> bool:
    """Whether the event is already the organization's (a redelivery that changed nothing, not a drop)."""
    known = select(minisite_events.c.id).where(
        minisite_events.c.id == event_id, minisite_events.c.organization_id == organization_id
    )
    return conn.execute(known).first() is not None


def minisite_event_published(conn: Connection, detail: dict[str, Any]) -> bool:
    return _upsert_minisite_event(conn, detail, archive=False)


def minisite_event_archived(conn: Connection, detail: dict[str, Any]) -> bool:
    return _upsert_minisite_event(conn, detail, archive=True)


MEMBERSHIP_SELF_SIGNUP = "membership.self_signup"


ENTITLEMENT_ACTIVATED = "entitlement.activated"


# Only real activations record a purchase (spec: "only the real pending→active transition records").
ACTIVATING_TRANSITIONS = frozenset({"pending_to_active", "created_active"})


def _ids(detail: dict[str, Any], *names: str) -> list[uuid.UUID] | None:
    parsed = [parse_uuid(str(detail.get(name, ""))) for name in names]
    return None if any(value is None for value in parsed) else [value for value in parsed if value is not None]


def handle_membership_self_signup(conn: Connection, detail: dict[str, Any]) -> bool:
    """`membership.self_signup`, platform detail {organizationId, userId, membershipId}.

    A signup that comes before its membership is here and active (the platform's `membership.created` is on
    its way) is held by the directory and applied here again when the membership is active (in that event's
    transaction). Malformed details are acknowledged and dropped (a retry could never make them valid)."""
    ids = _ids(detail, "organizationId", "userId", "membershipId")
    if ids is None:
        logger.warning("membership.self_signup without valid ids dropped")
        return False
    organization_id, user_id, membership_id = ids
    signup = {"organizationId": str(organization_id), "userId": str(user_id), "membershipId": str(membership_id)}
    if held_until_membership_active(conn, MEMBERSHIP_SELF_SIGNUP, membership_id, organization_id, user_id, signup):
        return False
    uow = ConsumerUnitOfWork(conn)
    linked = attach_on_self_signup(uow, organization_id, user_id, membership_id)
    uow.write_events()
    logger.info(
        "self-signup matched" if linked else "self-signup matched no lead",
        extra={"membershipId": str(membership_id), "leadId": str(linked) if linked else None},
    )
    return linked is not None


def handle_entitlement_activated(conn: Connection, detail: dict[str, Any]) -> bool:
    """`entitlement.activated`, platform detail {organizationId, userId, entitlementId, courseId, courseName,
    transition: 'pending_to_active' | 'created_active'}. Other transitions and malformed details are dropped."""
    ids = _ids(detail, "organizationId", "userId", "entitlementId")
    course_id = str(detail.get("courseId") or "").strip()
    course_name = " ".join(str(detail.get("courseName") or "").split())[:MAX_COURSE_NAME]
    if ids is None or not course_id or not course_name:
        logger.warning("entitlement.activated without valid ids or course dropped")
        return False
    if detail.get("transition") not in ACTIVATING_TRANSITIONS:
        logger.info("entitlement.activated ignored: not an activating transition")
        return False
    organization_id, user_id, entitlement_id = ids
    uow = ConsumerUnitOfWork(conn)
    lead_id = record_course_purchase(
        uow,
        CoursePurchase(
            organization_id=organization_id,
            user_id=user_id,
            entitlement_id=entitlement_id,
            course_id=course_id[:MAX_COURSE_NAME],
            course_name=course_name,
        ),
    )
    uow.write_events()
    return lead_id is not None
