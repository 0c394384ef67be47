"""Who may own a lead: an active staff member (owner, admin or coach) of the lead's organization."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import Connection, select

from leadcrm.directory.rules import STAFF_ROLES, MembershipStatus, Role
from leadcrm.directory.tables import memberships
from leadcrm.platform.errors import BadRequest


def is_active_member(
    conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID, roles: Iterable[Role] | None = None
) -> bool:
    """Whether the user has a live, active membership here (with one of `roles`, when given)."""
    conditions = [
        memberships.c.organization_id == organization_id,
        memberships.c.user_id == user_id,
        memberships.c.deleted_at.is_(None),
        memberships.c.status == MembershipStatus.ACTIVE.value,
    ]
    if roles is not None:
        conditions.append(memberships.c.role.in_([r.value for r in roles]))
    return conn.execute(select(memberships.c.id).where(*conditions)).first() is not None


def require_assignable_staff(conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """400 ASSIGNEE_NOT_STAFF unless the user is an active staff member here (never reveals who they are)."""
    if not is_active_member(conn, organization_id, user_id, STAFF_ROLES):
        raise BadRequest("The assignee must be an active staff member of this organization.", code="ASSIGNEE_NOT_STAFF")
