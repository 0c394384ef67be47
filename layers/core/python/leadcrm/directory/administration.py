"""Operator commands (`make admin …`): bootstrap an organization and its staff without database access.

Each write is stated as the platform event that would have made it (organization.created, user.created or
user.updated, membership.created / updated / deleted, stamped with the time it ran) and applied by the
consumer that applies the platform's own events, in one transaction. So an admin write has the platform
path's validation, ordering and reactions (a removed coach's open work is handed over exactly as when the
platform removes them), and a later platform event about the same records merges by updatedAt.

The directory cannot reach that consumer (it is the composition root's, leadcrm.wiring), so the caller
passes it in as `apply`. Refusals are `AdminError`s with a code, never a half-made organization.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, or_, select

from leadcrm.directory.rules import LEAD_MANAGEMENT, MembershipStatus, Role
from leadcrm.directory.rules.sync import (
    MalformedDetail,
    parse_membership,
    parse_membership_deletion,
    parse_organization,
    parse_user,
)
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform import clock
from leadcrm.platform.ids import parse_uuid, uuid7

ApplyEvent = Callable[[str, dict[str, Any]], bool]

# The consumers' own parsers: a refusal names the reason before anything is applied.
PARSERS: dict[str, Callable[[dict[str, Any]], object]] = {
    "organization.created": parse_organization,
    "user.created": parse_user,
    "user.updated": parse_user,
    "membership.created": parse_membership,
    "membership.updated": parse_membership,
    "membership.deleted": parse_membership_deletion,
}


class AdminError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Person:
    email: str
    subject: str | None = None
    first_name: str | None = None
    last_name: str | None = None


class DirectoryAdmin:
    def __init__(self, conn: Connection, apply: ApplyEvent, *, now: datetime | None = None) -> None:
        self._conn = conn
        self._apply = apply
        self._now = (now or clock.now()).isoformat()

    # -- commands -------------------------------------------------------------------------------------------

    def create_organization(
        self,
        *,
        name: str,
        owner: Person,
        timezone: str = "UTC",
        country: str | None = None,
        locale: str = "en",
    ) -> dict[str, Any]:
        organization_id = uuid7()
        detail = {
            "organizationId": str(organization_id),
            "name": name,
            "timezone": timezone,
            "locale": locale,
            "features": [LEAD_MANAGEMENT],
            "updatedAt": self._now,
        }
        if country is not None:
            detail["country"] = country
        self._must("organization.created", detail, "INVALID_ORGANIZATION")
        membership = self.add_member(organization_id=str(organization_id), person=owner, role=Role.OWNER.value)
        return {"organizationId": str(organization_id), "name": name, "owner": membership}

    def add_member(self, *, organization_id: str, person: Person, role: str) -> dict[str, Any]:
        org_id = self._organization(organization_id)
        role = self._role(role)
        user_id = self._user_for(person)
        if self._live_membership(org_id, user_id) is not None:
            raise AdminError("ALREADY_A_MEMBER", f"{person.email} is already a member; use set-role.")
        membership_id = uuid7()
        self._must(
            "membership.created",
            {
                "membershipId": str(membership_id),
                "organizationId": str(org_id),
                "userId": str(user_id),
                "role": role,
                "status": MembershipStatus.ACTIVE.value,
                "updatedAt": self._now,
            },
            "INVALID_MEMBERSHIP",
        )
        return {"membershipId": str(membership_id), "userId": str(user_id), "email": person.email, "role": role}

    def set_role(self, *, organization_id: str, member: str, role: str) -> dict[str, Any]:
        org_id = self._organization(organization_id)
        role = self._role(role)
        found = self._member(org_id, member)
        self._must(
            "membership.updated",
            {
                "membershipId": str(found.id),
                "organizationId": str(org_id),
                "userId": str(found.user_id),
                "role": role,
                "status": found.status,
                "updatedAt": self._now,
            },
            "INVALID_MEMBERSHIP",
        )
        return {"membershipId": str(found.id), "userId": str(found.user_id), "role": role, "previousRole": found.role}

    def remove_member(self, *, organization_id: str, member: str) -> dict[str, Any]:
        org_id = self._organization(organization_id)
        found = self._member(org_id, member)
        self._must(
            "membership.deleted",
            {"membershipId": str(found.id), "organizationId": str(org_id), "updatedAt": self._now},
            "INVALID_MEMBERSHIP",
        )
        return {"membershipId": str(found.id), "userId": str(found.user_id), "removed": True}

    def show_organization(self, *, organization_id: str) -> dict[str, Any]:
        org_id = self._organization(organization_id)
        org = self._conn.execute(
            select(
                organizations.c.name,
                organizations.c.timezone,
                organizations.c.country_code,
                organizations.c.locale,
                organizations.c.features,
                organizations.c.created_at,
            ).where(organizations.c.id == org_id)
        ).one()
        members = self._conn.execute(
            select(
                memberships.c.id, memberships.c.role, memberships.c.status, users.c.id.label("user_id"), users.c.email
            )
            .join(users, users.c.id == memberships.c.user_id)
            .where(memberships.c.organization_id == org_id, memberships.c.deleted_at.is_(None))
            .order_by(memberships.c.created_at, memberships.c.id)
        ).all()
        return {
            "organizationId": str(org_id),
            "name": org.name,
            "timezone": org.timezone,
            "country": org.country_code,
            "locale": org.locale,
            "features": org.features,
            "createdAt": org.created_at.isoformat(),
            "members": [
                {
                    "membershipId": str(m.id),
                    "userId": str(m.user_id),
                    "email": m.email,
                    "role": m.role,
                    "status": m.status,
                }
                for m in members
            ],
        }

    # -- lookups --------------------------------------------------------------------------------------------

    def _must(self, detail_type: str, detail: dict[str, Any], code: str) -> None:
        try:
            PARSERS[detail_type](detail)
        except MalformedDetail as malformed:
            raise AdminError(code, f"{detail_type} refused: {malformed}") from malformed
        if not self._apply(detail_type, detail):
            raise AdminError(code, f"{detail_type} was refused; the log line of this run says why.")

    @property
    def connection(self) -> Connection:
        """The command's transaction, for an operator job of another capability (admin.handler)."""
        return self._conn

    def live_organization(self, organization_id: str) -> uuid.UUID:
        """The id of a live organization, or ORGANIZATION_NOT_FOUND."""
        return self._organization(organization_id)

    def _organization(self, organization_id: str) -> uuid.UUID:
        org_id = parse_uuid(organization_id)
        live = (
            org_id is not None
            and self._conn.execute(
                select(organizations.c.id).where(organizations.c.id == org_id, organizations.c.deleted_at.is_(None))
            ).first()
        )
        if not live:
            raise AdminError("ORGANIZATION_NOT_FOUND", f"No organization {organization_id}.")
        assert org_id is not None
        return org_id

    @staticmethod
    def _role(role: str) -> str:
        if role not in {r.value for r in Role}:
            raise AdminError("INVALID_ROLE", f"role must be one of {', '.join(r.value for r in Role)}.")
        return role

    def _user_for(self, person: Person) -> uuid.UUID:
        """The user signing in as `person.subject` (or holding the email), told their subject; else a new one."""
        email = person.email.strip()
        if "@" not in email:
            raise AdminError("INVALID_EMAIL", f"{person.email!r} is not an email address.")
        by_subject = (
            person.subject
            and self._conn.execute(
                select(users.c.id).where(users.c.auth_subject == person.subject)
            ).scalar_one_or_none()
        )
        by_email = self._conn.execute(
            select(users.c.id, users.c.auth_subject).where(
                func.lower(users.c.email) == email.lower(), users.c.kind == "account"
            )
        ).first()
        if by_subject:
            return by_subject
        if by_email is not None and by_email.auth_subject not in (None, person.subject):
            raise AdminError("EMAIL_TAKEN", f"{email} already signs in with another subject.")
        user_id = by_email.id if by_email is not None else uuid7()
        detail = {
            "userId": str(user_id),
            "email": email,
            "firstName": person.first_name,
            "lastName": person.last_name,
            "updatedAt": self._now,
        }
        if person.subject:
            detail["authSubject"] = person.subject
        self._must("user.updated" if by_email is not None else "user.created", detail, "INVALID_USER")
        return user_id

    def _live_membership(self, organization_id: uuid.UUID, user_id: uuid.UUID) -> Any:
        return self._conn.execute(
            select(memberships.c.id, memberships.c.user_id, memberships.c.role, memberships.c.status).where(
                memberships.c.organization_id == organization_id,
                memberships.c.user_id == user_id,
                memberships.c.deleted_at.is_(None),
            )
        ).first()

    def _member(self, organization_id: uuid.UUID, member: str) -> Any:
        """A live membership by the member's email, user id or membership id."""
        as_id = parse_uuid(member)
        who = (
            or_(memberships.c.id == as_id, memberships.c.user_id == as_id)
            if as_id is not None
            else func.lower(users.c.email) == member.strip().lower()
        )
        found = self._conn.execute(
            select(memberships.c.id, memberships.c.user_id, memberships.c.role, memberships.c.status)
            .join(users, users.c.id == memberships.c.user_id)
            .where(memberships.c.organization_id == organization_id, memberships.c.deleted_at.is_(None), who)
        ).first()
        if found is None:
            raise AdminError("MEMBER_NOT_FOUND", f"{member} is not a member of {organization_id}.")
        return found
