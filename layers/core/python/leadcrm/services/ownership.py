"""Who may own a lead: an active staff member (owner, admin or coach) of the lead's organization."""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, select

from leadcrm.db.tables import memberships
from leadcrm.domain.access import STAFF_ROLES, MembershipStatus
from leadcrm.errors import BadRequest


def require_assignable_staff(conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """400 ASSIGNEE_NOT_STAFF unless the user is an active staff member here (never reveals who they are)."""
    found = conn.execute(
        select(memberships.c.id).where(
            memberships.c.organization_id == organization_id,
            memberships.c.user_id == user_id,
            memberships.c.deleted_at.is_(None),
            memberships.c.status == MembershipStatus.ACTIVE.value,
            memberships.c.role.in_([r.value for r in STAFF_ROLES]),
        )
    ).first()
    if found is None:
        raise BadRequest("The assignee must be an active staff member of this organization.", code="ASSIGNEE_NOT_STAFF")
