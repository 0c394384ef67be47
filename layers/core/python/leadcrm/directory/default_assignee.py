"""Who takes work nobody else is named for: the organization's default assignee (organizations.
default_assignee_user_id) when it is active staff, else its oldest active owner. Returning leads without an
owner (when no assignment rule places them first: leads.assignment) and a departed member's open work
(deals.owner_departure) ask here. New leads without an owner are placed by the assignment rules only: a
lead no rule places stays unassigned, on the work queue's `unassigned` reason."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, func, select, update

from leadcrm.directory.rules import STAFF_ROLES, Actor, MembershipStatus, Role
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.directory.tables import memberships, organizations
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork


def active_staff(organization_id: Any, user_id: Any) -> Any:
    return (
        select(memberships.c.id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.user_id == user_id,
            memberships.c.deleted_at.is_(None),
            memberships.c.status == MembershipStatus.ACTIVE.value,
            memberships.c.role.in_([r.value for r in STAFF_ROLES]),
        )
        .exists()
    )


def default_assignee(
    conn: Connection, organization_id: uuid.UUID, *, excluding: uuid.UUID | None = None
) -> uuid.UUID | None:
    """The organization's default assignee when it is an active staff member, else its oldest active owner
    (never `excluding`, the member who is leaving); None when there is nobody. One statement."""
    setting = (
        select(organizations.c.default_assignee_user_id)
        .where(
            organizations.c.id == organization_id,
            active_staff(organizations.c.id, organizations.c.default_assignee_user_id),
        )
        .scalar_subquery()
    )
    oldest_owner = select(memberships.c.user_id).where(
        memberships.c.organization_id == organization_id,
        memberships.c.role == Role.OWNER.value,
        memberships.c.status == MembershipStatus.ACTIVE.value,
        memberships.c.deleted_at.is_(None),
    )
    if excluding is not None:
        setting = select(setting).where(setting != excluding).scalar_subquery()
        oldest_owner = oldest_owner.where(memberships.c.user_id != excluding)
    oldest = oldest_owner.order_by(memberships.c.created_at, memberships.c.id).limit(1).scalar_subquery()
    return conn.execute(select(func.coalesce(setting, oldest))).scalar_one_or_none()


def read_default_assignee_setting(conn: Connection, organization_id: uuid.UUID) -> uuid.UUID | None:
    return conn.execute(
        select(organizations.c.default_assignee_user_id).where(organizations.c.id == organization_id)
    ).scalar_one_or_none()


def set_default_assignee(uow: UnitOfWork, actor: Actor, user_id: uuid.UUID | None) -> uuid.UUID | None:
    """Owner/admin: who takes work nobody else is named for (None: the oldest active owner)."""
    if user_id is not None:
        require_assignable_staff(uow.connection, actor.organization_id, user_id)
    uow.connection.execute(
        update(organizations)
        .where(organizations.c.id == actor.organization_id)
        .values(default_assignee_user_id=user_id, updated_at=sql_now())
    )
    return user_id
