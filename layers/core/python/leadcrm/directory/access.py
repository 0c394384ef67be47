"""Resolves the caller inside an organization and applies the gates, on every request.

The JWT says who the caller is (its subject); the membership row says what they may do now. A user who
lost access is refused on their next request, whatever their token still says.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, select

from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor, MembershipStatus, Role, enabled_features, phone_region
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform.errors import Forbidden


def resolve_actor(conn: Connection, auth_subject: str, organization_id: uuid.UUID) -> Actor:
    """The caller's active membership in the organization, in one query; 403 when there is none.

    The same row brings the organization's features and the region it reads national phone numbers in.

    An organization that does not exist, or that the platform deleted, answers exactly like one the caller is
    not a member of. A read can carry this check in its own first statement instead
    (leadcrm.directory.member_reads): the same query, `membership_query`.
    """
    row = conn.execute(membership_query(auth_subject, organization_id)).mappings().first()
    if row is None:
        raise not_a_member()
    return actor_of(row, organization_id)


def membership_query(
    auth_subject: str | ColumnElement[str], organization_id: uuid.UUID | ColumnElement[uuid.UUID]
) -> Select:
    """The one definition of "an active member": the user the JWT subject maps to, a membership neither
    deleted nor anything but active, in an organization the platform did not delete. Its columns are
    `caller_*`, so that a read can put them beside its own without a clash (`actor_of` reads them back)."""
    return (
        select(
            users.c.id.label("caller_user_id"),
            memberships.c.id.label("caller_membership_id"),
            memberships.c.role.label("caller_role"),
            organizations.c.features.label("caller_features"),
            organizations.c.country_code.label("caller_country_code"),
            organizations.c.timezone.label("caller_timezone"),
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


def actor_of(row: Mapping[str, Any], organization_id: uuid.UUID) -> Actor:
    """The Actor a `membership_query` row describes."""
    return Actor(
        user_id=row["caller_user_id"],
        organization_id=organization_id,
        membership_id=row["caller_membership_id"],
        role=Role(row["caller_role"]),
        features=enabled_features(row["caller_features"]),
        phone_region=phone_region(row["caller_country_code"], row["caller_timezone"]),
    )


def not_a_member() -> Forbidden:
    return Forbidden("You are not a member of this organization.", code="NOT_A_MEMBER")


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
