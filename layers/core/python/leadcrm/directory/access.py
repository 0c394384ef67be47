"""Resolves the caller inside an organization and applies the gates, on every request.

The JWT says who the caller is (its subject); the membership row says what they may do now. A user who
lost access is refused on their next request, whatever their token still says.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Connection, select

from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor, MembershipStatus, Role, enabled_features
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform.errors import Forbidden


def resolve_actor(conn: Connection, auth_subject: str, organization_id: uuid.UUID) -> Actor:
    """The caller's active membership in the organization, in one query; 403 when there is none.

    An organization that does not exist, or that the platform deleted, answers exactly like one the caller is
    not a member of.
    """
    row = (
        conn.execute(
            select(
                users.c.id.label("user_id"),
                memberships.c.id.label("membership_id"),
                memberships.c.role,
                organizations.c.features,
            )
            .select_from(
                users.join(memberships, memberships.c.user_id == users.c.id).join(
                    organizations, organizations.c.id == memberships.c.organization_id
                )
            )
            .where(
                users.c.auth_subject == auth_subject,
                memberships.c.organization_id == organization_id,
                memberships.c.deleted_at.is_(None),
                memberships.c.status == MembershipStatus.ACTIVE.value,
                organizations.c.deleted_at.is_(None),
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise Forbidden("You are not a member of this organization.", code="NOT_A_MEMBER")
    return Actor(
        user_id=row["user_id"],
        organization_id=organization_id,
        membership_id=row["membership_id"],
        role=Role(row["role"]),
        features=enabled_features(row["features"]),
    )


def require_staff(actor: Actor) -> Actor:
    """Owner, admin or coach, in an organization with lead management."""
    require_feature(actor, LEAD_MANAGEMENT)
    if not actor.is_staff:
        raise Forbidden("Only staff (owner, admin or coach) may do this.", code="STAFF_ONLY")
    return actor


def require_manager(actor: Actor) -> Actor:
    """Owner or admin, in an organization with lead management."""
    require_feature(actor, LEAD_MANAGEMENT)
    if not actor.is_manager:
        raise Forbidden("Only an owner or admin may do this.", code="OWNER_OR_ADMIN_ONLY")
    return actor


def require_feature(actor: Actor, feature: str) -> None:
    if not actor.has_feature(feature):
        raise Forbidden(
            f"This organization does not have the {feature} feature.", code="FEATURE_DISABLED", feature=feature
        )
