"""Who may do what. Roles come from the membership row, read on every request, never from the token."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    COACH = "coach"
    MEMBER = "member"


class MembershipStatus(StrEnum):
    ACTIVE = "active"
    PENDING_INVITATION = "pending_invitation"
    CANCELLED = "cancelled"
    SUSPENDED = "suspended"


STAFF_ROLES = frozenset({Role.OWNER, Role.ADMIN, Role.COACH})
MANAGER_ROLES = frozenset({Role.OWNER, Role.ADMIN})

LEAD_MANAGEMENT = "lead_management"


@dataclass(frozen=True)
class Actor:
    """The caller inside one organization: resolved from the JWT subject and the membership row.

    `system_actor` is the one exception: no user, no membership, no role (see there)."""

    user_id: uuid.UUID | None
    organization_id: uuid.UUID
    membership_id: uuid.UUID | None
    role: Role | None
    features: frozenset[str]

    @property
    def is_staff(self) -> bool:
        return is_staff_role(self.role)

    @property
    def is_manager(self) -> bool:
        return self.role in MANAGER_ROLES

    def has_feature(self, feature: str) -> bool:
        return feature in self.features


def system_actor(organization_id: uuid.UUID) -> Actor:
    """Who writes when a platform event moves a lead (self-signup, a purchase, a released join): nobody.

    Its writes record no actor (actor_user_id NULL, actorUserId null). It has no role and no features, so
    every gate refuses it: it is for services called by event consumers, never for a route.
    """
    return Actor(user_id=None, organization_id=organization_id, membership_id=None, role=None, features=frozenset())


def is_staff_role(role: Role | str | None) -> bool:
    return role in STAFF_ROLES


def enabled_features(features: dict[str, object] | list[str] | None) -> frozenset[str]:
    """Organization features are stored as a JSON object of flags (or a list of names); only true flags count."""
    if not features:
        return frozenset()
    if isinstance(features, list):
        return frozenset(str(f) for f in features)
    return frozenset(name for name, on in features.items() if on is True)


# The organization settings both the platform (organization.* events) and the settings route may change.
# `features` is the platform's alone (plans), `default_assignee_user_id` LeadCRM's alone.
SHARED_SETTINGS = ("name", "timezone", "country_code", "locale")


def settings_to_apply(
    changes: dict[str, object], changed_at: datetime, last_changed: dict[str, str | None]
) -> dict[str, object]:
    """The shared settings of `changes` newer than each field's last change: the newer writer wins per field.

    `last_changed` is `organizations.settings_changed_at` (field -> ISO instant); a field never changed has
    no entry and always takes the change. An equal time is not newer: a redelivery changes nothing."""
    applied: dict[str, object] = {}
    for field, value in changes.items():
        if field not in SHARED_SETTINGS:
            raise ValueError(f"{field!r} is not a shared organization setting")
        previous = last_changed.get(field)
        if previous is None or datetime.fromisoformat(previous) < changed_at:
            applied[field] = value
    return applied
