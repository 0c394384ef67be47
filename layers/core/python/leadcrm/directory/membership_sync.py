"""Memberships as the platform sends them: `membership.created` / `.updated` / `.deleted`, and the older
`membership.status_changed`. Platform ids are ours: `membershipId` is `memberships.id`.

Order-tolerant and idempotent (directory.rules.sync): a version applies only when newer than the row's
`platform_updated_at`; a deletion is a tombstone (`deleted_at`, the earliest seen) that no event clears. So a
replay is a no-op, a late `created` does not regress an `updated`, and any order of one set of events ends in
the same row.

Never half-made: a membership is inserted whole (organization, user, role, status) or not at all. One that
cannot be yet (its organization or user has not arrived, only its deletion is known, or its person still has
another live membership here) is held (directory.held) and inserted when the missing piece arrives, in that
event's transaction (`release_for_organization`, `release_for_user`, a deletion freeing the person's slot).

A membership that stops being active staff publishes `MembershipLeftStaff` (deals hands its open work over);
one that is active releases the events held until it was (a self-signup that came first).

Every function runs in the caller's unit of work: the task_lifecycle consumer's, or the admin command's. An
event that can never apply (naming another organization or user than its membership's; a status change for a
membership the directory does not have) raises `leadcrm.platform.failures.Rejected`: the consumer records
and acknowledges it (directory.reactions), and nothing of it is written.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from leadcrm.directory import held
from leadcrm.directory.messages import HeldEventsReleased, MembershipLeftStaff
from leadcrm.directory.rules import MembershipStatus
from leadcrm.directory.rules.sync import (
    MembershipDeletion,
    MembershipRecord,
    MembershipState,
    MembershipStatusChange,
    earliest,
    is_active_staff,
    is_newer,
    merge_membership,
)
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.failures import INVALID_DATA, REFUSED, Rejected
from leadcrm.platform.messagebus import handle

MEMBERSHIP_CREATED = "membership.created"
MEMBERSHIP_UPDATED = "membership.updated"
MEMBERSHIP_DELETED = "membership.deleted"
MEMBERSHIP_STATUS_CHANGED = "membership.status_changed"


def apply_membership(uow: UnitOfWork, state: MembershipState, *, detail_type: str = MEMBERSHIP_UPDATED) -> bool:
    """A membership's version: inserted, updated when newer, or held. True when anything was written."""
    source_key = f"{detail_type}:{state.membership_id}:{state.version.isoformat()}"
    return _settle(uow, state.membership_id, state.organization_id, state.user_id, state, None, detail_type, source_key)


def delete_membership(uow: UnitOfWork, deletion: MembershipDeletion) -> bool:
    """A membership's deletion: its tombstone (held when the membership is not here yet)."""
    source_key = f"{MEMBERSHIP_DELETED}:{deletion.membership_id}:{deletion.deleted_at.isoformat()}"
    return _settle(
        uow,
        deletion.membership_id,
        deletion.organization_id,
        deletion.user_id,
        None,
        deletion.deleted_at,
        MEMBERSHIP_DELETED,
        source_key,
    )


def apply_status_change(uow: UnitOfWork, change: MembershipStatusChange) -> bool:
    """The older `membership.status_changed`: mirrors the status of a membership we have (an unknown one is
    rejected: the event names no user or role to make it from). With `changedAt` it is versioned like the
    others; without, it is applied as it comes."""
    conn = uow.connection
    held.serialize_sync(conn)
    row = _lock(conn, change.membership_id)
    if row is None or row.organization_id != change.organization_id:
        raise Rejected(REFUSED, f"{MEMBERSHIP_STATUS_CHANGED}: no such membership in this organization")
    values: dict[str, Any] = {}
    if change.changed_at is None or is_newer(change.changed_at, row.platform_updated_at):
        if row.status != change.status.value:
            values["status"] = change.status.value
        if change.changed_at is not None:
            values["platform_updated_at"] = change.changed_at
    if change.deleted_at is not None and earliest(row.deleted_at, change.deleted_at) != row.deleted_at:
        values["deleted_at"] = earliest(row.deleted_at, change.deleted_at)
    text = change.changed_at_text
    source_key = f"{MEMBERSHIP_STATUS_CHANGED}:{change.membership_id}:{change.status.value}:{text}" if text else None
    return _update(uow, row, values, source_key)


def release_for_organization(uow: UnitOfWork, organization_id: uuid.UUID) -> None:
    """The organization arrived: the memberships held for it are inserted (or held for their user)."""
    for membership_id in held.memberships_waiting(uow.connection, "organization", organization_id=organization_id):
        _retry(uow, membership_id)


def release_for_user(uow: UnitOfWork, user_id: uuid.UUID) -> None:
    """The user arrived: the memberships held for them are inserted (or held for their organization)."""
    for membership_id in held.memberships_waiting(uow.connection, "user", user_id=user_id):
        _retry(uow, membership_id)


# -- one membership ----------------------------------------------------------------------------------------


def _settle(
    uow: UnitOfWork,
    membership_id: uuid.UUID,
    organization_id: uuid.UUID,
    user_id: uuid.UUID | None,
    state: MembershipState | None,
    deleted_at: datetime | None,
    detail_type: str,
    source_key: str,
) -> bool:
    conn = uow.connection
    held.serialize_sync(conn)
    row = _lock(conn, membership_id)
    if row is not None:
        if row.organization_id != organization_id or (user_id is not None and row.user_id != user_id):
            # Ids are the platform's and never move: a membership "moving" is a broken event, not a change.
            raise Rejected(INVALID_DATA, f"{detail_type}: another organization or user than the membership's")
        values: dict[str, Any] = {}
        if state is not None and is_newer(state.version, row.platform_updated_at):
            values.update(role=state.role.value, status=state.status.value, platform_updated_at=state.version)
        tombstone = earliest(row.deleted_at, deleted_at)
        if tombstone != row.deleted_at:
            values["deleted_at"] = tombstone
        return _update(uow, row, values, source_key)
    known = held.held_membership(conn, membership_id)
    if known is not None and known.organization_id != organization_id:
        raise Rejected(INVALID_DATA, f"{detail_type}: another organization than the held membership's")
    record = merge_membership(known.record if known else None, state, deleted_at)
    if known is not None and record == known.record:
        return False  # a replay of what is held already
    newest_type = known.detail_type if known is not None and record.state == known.record.state else detail_type
    _insert_or_hold(
        uow, membership_id, organization_id, user_id or (known.user_id if known else None), record, newest_type
    )
    return True


def _retry(uow: UnitOfWork, membership_id: uuid.UUID) -> None:
    known = held.held_membership(uow.connection, membership_id)
    if known is not None:
        _insert_or_hold(uow, membership_id, known.organization_id, known.user_id, known.record, known.detail_type)


def _insert_or_hold(
    uow: UnitOfWork,
    membership_id: uuid.UUID,
    organization_id: uuid.UUID,
    user_id: uuid.UUID | None,
    record: MembershipRecord,
    detail_type: str,
) -> None:
    conn = uow.connection
    waiting_for = _waiting_for(conn, membership_id, organization_id, record)
    if waiting_for is not None:
        held.hold_membership(
            conn, membership_id, organization_id, user_id, record, waiting_for=waiting_for, detail_type=detail_type
        )
        return
    state = record.state
    assert state is not None  # _waiting_for holds a membership known only by its deletion
    conn.execute(
        insert(memberships).values(
            id=membership_id,
            organization_id=organization_id,
            user_id=state.user_id,
            role=state.role.value,
            status=state.status.value,
            platform_updated_at=state.version,
            deleted_at=record.deleted_at,
        )
    )
    held.release_membership(conn, membership_id)
    _after_change(uow, _lock(conn, membership_id), was_active_staff=False, source_key=None)


def _waiting_for(
    conn: Connection, membership_id: uuid.UUID, organization_id: uuid.UUID, record: MembershipRecord
) -> str | None:
    """What the membership still needs before it can be inserted whole, or None."""
    state = record.state
    if state is None:
        return "creation"
    if conn.execute(select(organizations.c.id).where(organizations.c.id == organization_id)).first() is None:
        return "organization"
    if conn.execute(select(users.c.id).where(users.c.id == state.user_id)).first() is None:
        return "user"
    if record.deleted_at is None and _other_live_membership(conn, membership_id, organization_id, state.user_id):
        # One live membership per person and organization: the platform's deletion of the other is on its way.
        return "live_membership"
    return None


def _other_live_membership(
    conn: Connection, membership_id: uuid.UUID, organization_id: uuid.UUID, user_id: uuid.UUID
) -> bool:
    return (
        conn.execute(
            select(memberships.c.id).where(
                memberships.c.organization_id == organization_id,
                memberships.c.user_id == user_id,
                memberships.c.deleted_at.is_(None),
                memberships.c.id != membership_id,
            )
        ).first()
        is not None
    )


def _lock(conn: Connection, membership_id: uuid.UUID) -> Any:
    return conn.execute(
        select(
            memberships.c.id,
            memberships.c.organization_id,
            memberships.c.user_id,
            memberships.c.role,
            memberships.c.status,
            memberships.c.deleted_at,
            memberships.c.platform_updated_at,
        )
        .where(memberships.c.id == membership_id)
        .with_for_update()
    ).first()


def _update(uow: UnitOfWork, row: Any, values: dict[str, Any], source_key: str | None) -> bool:
    if not values:
        return False
    conn = uow.connection
    conn.execute(update(memberships).where(memberships.c.id == row.id).values(**values, updated_at=sql_now()))
    was_active_staff = is_active_staff(row.role, row.status, row.deleted_at)
    _after_change(uow, _lock(conn, row.id), was_active_staff=was_active_staff, source_key=source_key)
    if row.deleted_at is None and values.get("deleted_at") is not None:
        # The person's slot is free: a newer membership of theirs held behind this one can go in now.
        slot = {"organization_id": row.organization_id, "user_id": row.user_id}
        for waiting in held.memberships_waiting(conn, "live_membership", **slot):
            _retry(uow, waiting)
    return True


def _after_change(uow: UnitOfWork, row: Any, *, was_active_staff: bool, source_key: str | None) -> None:
    conn = uow.connection
    if was_active_staff and not is_active_staff(row.role, row.status, row.deleted_at):
        handle(conn, MembershipLeftStaff(uow, row.organization_id, row.id, row.user_id, source_key))
    if row.deleted_at is None and row.status == MembershipStatus.ACTIVE.value:
        waiting = held.take_waiting_for_membership(conn, row.id)
        if waiting:
            handle(conn, HeldEventsReleased(row.organization_id, row.id, waiting))
