"""Data factories: organizations, users and memberships written with SQLAlchemy Core.

Every test makes its own organization(s), so tests never see each other's rows and nothing is truncated.
Ids are UUIDv7 from the application's own generator, as the product makes them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, insert

from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7

LEAD_MANAGEMENT_ON = {"lead_management": True}


@dataclass(frozen=True)
class Organization:
    id: uuid.UUID
    name: str


@dataclass(frozen=True)
class User:
    id: uuid.UUID
    auth_subject: str | None
    email: str | None


@dataclass(frozen=True)
class Membership:
    id: uuid.UUID
    organization_id: uuid.UUID
    user_id: uuid.UUID
    role: str
    status: str


@dataclass(frozen=True)
class StaffCaller:
    """A user with a membership: who calls the API in most tests."""

    organization: Organization
    user: User
    membership: Membership

    @property
    def sub(self) -> str:
        assert self.user.auth_subject is not None
        return self.user.auth_subject

    @property
    def org_id(self) -> uuid.UUID:
        return self.organization.id


def _write(statement: Any, conn: Connection | None) -> None:
    if conn is not None:
        conn.execute(statement)
        return
    with get_engine().begin() as own:
        own.execute(statement)


def make_organization(
    *,
    name: str | None = None,
    features: dict[str, Any] | list[str] | None = None,
    conn: Connection | None = None,
) -> Organization:
    """An organization with lead management on, unless `features` says otherwise."""
    org_id = uuid7()
    name = name or f"Studio {org_id.hex[-6:]}"
    _write(
        insert(organizations).values(
            id=org_id,
            name=name,
            features=LEAD_MANAGEMENT_ON if features is None else features,
        ),
        conn,
    )
    return Organization(id=org_id, name=name)


def make_user(*, auth_subject: str | None = None, email: str | None = None, conn: Connection | None = None) -> User:
    """A user who can sign in; `auth_subject` (the JWT `sub`) defaults to a fresh unique one."""
    user_id = uuid7()
    subject = auth_subject or f"user_{uuid.uuid4().hex}"
    email = email or f"{user_id.hex[-10:]}@example.test"
    _write(
        insert(users).values(id=user_id, auth_subject=subject, email=email, first_name="Test", last_name="User"),
        conn,
    )
    return User(id=user_id, auth_subject=subject, email=email)


def make_membership(
    organization: Organization | uuid.UUID,
    user: User | uuid.UUID,
    *,
    role: str = "coach",
    status: str = "active",
    deleted: bool = False,
    conn: Connection | None = None,
) -> Membership:
    org_id = organization.id if isinstance(organization, Organization) else organization
    user_id = user.id if isinstance(user, User) else user
    membership_id = uuid7()
    _write(
        insert(memberships).values(
            id=membership_id,
            organization_id=org_id,
            user_id=user_id,
            role=role,
            status=status,
            deleted_at=datetime.now(UTC) if deleted else None,
        ),
        conn,
    )
    return Membership(id=membership_id, organization_id=org_id, user_id=user_id, role=role, status=status)


def make_caller(
    *,
    role: str = "coach",
    status: str = "active",
    deleted: bool = False,
    organization: Organization | None = None,
    features: dict[str, Any] | list[str] | None = None,
) -> StaffCaller:
    """A user with a membership of `role` in `organization` (a new one with lead management by default)."""
    org = organization or make_organization(features=features)
    user = make_user()
    membership = make_membership(org, user, role=role, status=status, deleted=deleted)
    return StaffCaller(organization=org, user=user, membership=membership)
