"""Platform events the directory cannot apply yet, kept (never lost, never half-applied) until they can be.

One row per held thing (`directory_held_events`, keyed by kind and id), keeping only its newest version and
its tombstone (directory.rules.sync.merge_membership):
- `membership`: a membership whose organization or user is not here yet, known only by its deletion, or
  whose person still has another live membership here (the platform's deletion of it is on its way);
- `organization`: an organization's deletion that came before its creation;
- `user`: a user stored without the email or subject another user still holds (directory.user_sync);
- `membership.self_signup` (another capability's event, kind = its detail type): waiting for its membership
  to be here and active.

Whoever brings the missing row applies what waited for it, in the same transaction (directory.membership_sync,
organization_sync, user_sync). `serialize_sync` makes "is it there? else hold" and "insert, then release what
waited" one after the other, so a hold and the arrival it waits for never miss each other.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, or_, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import MembershipStatus
from leadcrm.directory.rules.sync import (
    MembershipRecord,
    UserState,
    earliest,
    parse_membership,
    parse_user,
)
from leadcrm.directory.tables import directory_held_events as held
from leadcrm.directory.tables import memberships
from leadcrm.platform.db.now import sql_now

logger = logging.getLogger(__name__)

MEMBERSHIP = "membership"
ORGANIZATION = "organization"
USER = "user"

# One transaction-scoped advisory lock for every directory sync write (pg_advisory_xact_lock). Directory
# events are few (people joining and leaving), so one lock costs nothing and rules out the race of a held row
# and the arrival it waits for committing side by side without seeing each other.
DIRECTORY_SYNC_LOCK = 0x6C6561646372_6D  # "leadcr" "m"


def serialize_sync(conn: Connection) -> None:
    """Waits for any other directory sync transaction; held until this one ends."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": DIRECTORY_SYNC_LOCK})


def _upsert(
    conn: Connection,
    kind: str,
    subject_id: uuid.UUID,
    *,
    waiting_for: str,
    detail_type: str,
    detail: dict[str, Any] | None,
    version: datetime | None,
    deleted_at: datetime | None,
    organization_id: uuid.UUID | None,
    user_id: uuid.UUID | None,
) -> None:
    values = {
        "waiting_for": waiting_for,
        "detail_type": detail_type,
        "detail": detail,
        "version": version,
        "deleted_at": deleted_at,
        "organization_id": organization_id,
        "user_id": user_id,
    }
    statement = pg_insert(held).values(kind=kind, subject_id=subject_id, **values)
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["kind", "subject_id"], set_={**values, "updated_at": sql_now()}
        )
    )


def _take(conn: Connection, kind: str, subject_id: uuid.UUID) -> Any:
    return conn.execute(
        delete(held).where(held.c.kind == kind, held.c.subject_id == subject_id).returning(*held.c)
    ).first()


# -- memberships -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeldMembership:
    record: MembershipRecord
    organization_id: uuid.UUID
    user_id: uuid.UUID | None
    detail_type: str  # of its newest version


def held_membership(conn: Connection, membership_id: uuid.UUID) -> HeldMembership | None:
    row = conn.execute(select(held).where(held.c.kind == MEMBERSHIP, held.c.subject_id == membership_id)).first()
    if row is None:
        return None
    state = parse_membership(row.detail) if row.detail is not None else None
    return HeldMembership(
        record=MembershipRecord(state=state, deleted_at=row.deleted_at),
        organization_id=row.organization_id,
        user_id=row.user_id,
        detail_type=row.detail_type,
    )


def hold_membership(
    conn: Connection,
    membership_id: uuid.UUID,
    organization_id: uuid.UUID,
    user_id: uuid.UUID | None,
    record: MembershipRecord,
    *,
    waiting_for: str,
    detail_type: str,
) -> None:
    state = record.state
    _upsert(
        conn,
        MEMBERSHIP,
        membership_id,
        waiting_for=waiting_for,
        detail_type=detail_type,
        detail=state.to_detail() if state is not None else None,
        version=state.version if state is not None else None,
        deleted_at=record.deleted_at,
        organization_id=organization_id,
        user_id=state.user_id if state is not None else user_id,
    )
    logger.info("membership held", extra={"membershipId": str(membership_id), "waitingFor": waiting_for})


def release_membership(conn: Connection, membership_id: uuid.UUID) -> None:
    _take(conn, MEMBERSHIP, membership_id)


def memberships_waiting(
    conn: Connection,
    waiting_for: str,
    *,
    organization_id: uuid.UUID | None = None,
    user_id: uuid.UUID | None = None,
) -> list[uuid.UUID]:
    """Memberships held for `waiting_for` of this organization and/or user, oldest version first."""
    conditions = [held.c.kind == MEMBERSHIP, held.c.waiting_for == waiting_for]
    if organization_id is not None:
        conditions.append(held.c.organization_id == organization_id)
    if user_id is not None:
        conditions.append(held.c.user_id == user_id)
    return list(
        conn.execute(
            select(held.c.subject_id).where(*conditions).order_by(held.c.version.nulls_first(), held.c.subject_id)
        ).scalars()
    )


# -- organizations -----------------------------------------------------------------------------------------


def hold_organization_deletion(conn: Connection, organization_id: uuid.UUID, deleted_at: datetime) -> bool:
    """Keeps the earliest deletion of an organization not here yet; False when that changed nothing (a replay)."""
    previous = conn.execute(
        select(held.c.deleted_at).where(held.c.kind == ORGANIZATION, held.c.subject_id == organization_id)
    ).scalar()
    if previous is not None and earliest(previous, deleted_at) == previous:
        return False
    _upsert(
        conn,
        ORGANIZATION,
        organization_id,
        waiting_for="creation",
        detail_type="organization.deleted",
        detail=None,
        version=None,
        deleted_at=earliest(previous, deleted_at),
        organization_id=organization_id,
        user_id=None,
    )
    logger.info("organization deletion held", extra={"organizationId": str(organization_id)})
    return True


def take_organization_deletion(conn: Connection, organization_id: uuid.UUID) -> datetime | None:
    row = _take(conn, ORGANIZATION, organization_id)
    return row.deleted_at if row is not None else None


# -- users -------------------------------------------------------------------------------------------------


def hold_user(conn: Connection, state: UserState, *, waiting_for: str) -> None:
    _upsert(
        conn,
        USER,
        state.user_id,
        waiting_for=waiting_for,
        detail_type="user.updated",
        detail=state.to_detail(),
        version=state.version,
        deleted_at=None,
        organization_id=None,
        user_id=state.user_id,
    )
    logger.warning("user stored without a value another user holds", extra={"userId": str(state.user_id)})


def release_user(conn: Connection, user_id: uuid.UUID) -> None:
    _take(conn, USER, user_id)


def users_claiming(conn: Connection, *, email: str | None, auth_subject: str | None) -> list[UserState]:
    """Held users waiting for this email (any case) or subject, oldest claim first."""
    claims = []
    if email is not None:
        claims.append(func.lower(held.c.detail["email"].astext) == email.lower())
    if auth_subject is not None:
        claims.append(held.c.detail["authSubject"].astext == auth_subject)
    if not claims:
        return []
    rows = conn.execute(
        select(held.c.detail).where(held.c.kind == USER, or_(*claims)).order_by(held.c.version, held.c.subject_id)
    ).scalars()
    return [parse_user(detail) for detail in rows]


# -- events waiting for a membership -----------------------------------------------------------------------


def held_until_membership_active(
    conn: Connection,
    detail_type: str,
    membership_id: uuid.UUID,
    organization_id: uuid.UUID,
    user_id: uuid.UUID,
    detail: dict[str, Any],
) -> bool:
    """Whether another capability's event must wait for its membership, which is then not here yet, or here
    (this user's, in this organization, not deleted) but not active yet: True when it was held. It is handed
    back (`directory.messages.HeldEventsReleased`) once the membership is active, and applied as if it had just
    arrived; the latest delivery is kept. False: apply it now (the membership is active, or it is deleted or
    someone else's, which no later event changes)."""
    serialize_sync(conn)
    row = conn.execute(
        select(
            memberships.c.organization_id, memberships.c.user_id, memberships.c.status, memberships.c.deleted_at
        ).where(memberships.c.id == membership_id)
    ).first()
    if row is not None and (
        row.organization_id != organization_id
        or row.user_id != user_id
        or row.deleted_at is not None
        or row.status == MembershipStatus.ACTIVE.value
    ):
        return False
    _upsert(
        conn,
        detail_type,
        membership_id,
        waiting_for="membership",
        detail_type=detail_type,
        detail=detail,
        version=None,
        deleted_at=None,
        organization_id=organization_id,
        user_id=user_id,
    )
    logger.info("event held until its membership is active", extra={"detailType": detail_type})
    return True


def take_waiting_for_membership(conn: Connection, membership_id: uuid.UUID) -> list[tuple[str, dict[str, Any]]]:
    rows = conn.execute(
        delete(held)
        .where(held.c.subject_id == membership_id, held.c.waiting_for == "membership")
        .returning(held.c.detail_type, held.c.detail)
    ).all()
    return sorted(((row.detail_type, row.detail) for row in rows), key=lambda event: event[0])
