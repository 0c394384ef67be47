"""Organizations, users and memberships as the platform hands them to LeadCRM.

The platform's own services own sign-up and invitations; these writes are how their records arrive here
(and how the local stack makes a demo organization).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, insert

from leadcrm.directory.rules import LEAD_MANAGEMENT, MembershipStatus, Role
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform.ids import uuid7


def create_organization(
    conn: Connection,
    name: str,
    *,
    timezone: str = "UTC",
    locale: str = "en",
    features: dict[str, Any] | None = None,
) -> uuid.UUID:
    organization_id = uuid7()
    conn.execute(
        insert(organizations).values(
            id=organization_id,
            name=name,
            timezone=timezone,
            locale=locale,
            features=features if features is not None else {LEAD_MANAGEMENT: True},
        )
    )
    return organization_id


def create_user(
    conn: Connection,
    *,
    auth_subject: str | None,
    email: str | None = None,
    first_name: str | None = None,
    last_name: str | None = None,
    phone: str | None = None,
    kind: str = "account",
) -> uuid.UUID:
    user_id = uuid7()
    conn.execute(
        insert(users).values(
            id=user_id,
            auth_subject=auth_subject,
            email=email,
            first_name=first_name,
            last_name=last_name,
            phone=phone,
            kind=kind,
        )
    )
    return user_id


def add_membership(
    conn: Connection,
    organization_id: uuid.UUID,
    user_id: uuid.UUID,
    role: Role,
    status: MembershipStatus = MembershipStatus.ACTIVE,
) -> uuid.UUID:
    membership_id = uuid7()
    conn.execute(
        insert(memberships).values(
            id=membership_id,
            organization_id=organization_id,
            user_id=user_id,
            role=role.value,
            status=status.value,
        )
    )
    return membership_id
