"""Leads becoming members: convert (G4), link to an existing member, self-signup, course purchases.

Every path that makes a lead a member ends in `_attach`: `leads.converted_membership_id` is set once, under
the lead's row lock, and the lead lands on its primary pipeline's converted stage, else its customer stage,
else stays where it is (spec "Pipeline win coverage"). The landing is an ordinary primary move through
`leads.moves.update_lead` (status event, `stage_moved` entry, `lead.status_changed` on a category change);
"converted only via convert" holds without any bypass because the lead already has its membership when
the move is planned (`leads.rules.moves.is_converted`).

- `convert_lead` (owner/admin): creates the membership (and the user when the email has none) and emits
  `membership.activated`; an email of an active member writes nothing and answers `existing_member`.
- `link_lead_to_member` (owner/admin): the repair path; no `membership.activated` (its fan-out already ran).
- `link_candidates_for_lead` (staff): who the lead may be, listed for a person to choose from.
- `attach_on_self_signup` / `record_course_purchase`: platform events, matched by `find_lead_for_person`.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import Actor, MembershipStatus, Role, system_actor
from leadcrm.directory.tables import memberships, users
from leadcrm.leads.activity import record_activity
from leadcrm.leads.identity import (
    ACCOUNT,
    find_lead_for_person,
    link_candidates,
    organization_region,
    person_for_user,
    search_link_candidates,
    search_terms,
)
from leadcrm.leads.messages import LeadBecameMember
from leadcrm.leads.moves import LeadUpdate, lock_lead, update_lead
from leadcrm.leads.rules.identity import canonical_email
from leadcrm.leads.rules.moves import is_converted
from leadcrm.leads.tables import leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.stages import StageRow, first_active_stage
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.events import MEMBERSHIP_ACTIVATED, DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.platform.messagebus import handle

logger = logging.getLogger(__name__)

# Timeline entry types (lead_activity_events.type) this module writes.
MEMBER_LINKED = "member_linked"
PURCHASE_ACTIVITY = "purchase"

# How the lead became the member's, on the `member_linked` entry and in logs.
VIA_CONVERT = "convert"
VIA_LINK = "link"
VIA_SELF_SIGNUP = "self_signup"

LEAD_CONVERTED_SOURCE = "lead_converted"
CONVERTIBLE_ROLES = (Role.MEMBER, Role.COACH, Role.ADMIN)
MAX_COURSE_TAG_NAME = 100  # the tag API's own name limit


def _already_converted() -> BadRequest:
    return BadRequest("Lead has already been converted", code="LEAD_ALREADY_CONVERTED")


def _membership_not_found() -> NotFound:
    return NotFound("Membership not found.", code="MEMBERSHIP_NOT_FOUND")


# --- the one attach ---------------------------------------------------------------------------------------


def win_stage(conn: Connection, organization_id: uuid.UUID, pipeline_id: uuid.UUID) -> StageRow | None:
    """Where a new member lands: the pipeline's first active converted stage, else customer stage, else None."""
    for category in (StageCategory.CONVERTED, StageCategory.CUSTOMER):
        stage = first_active_stage(conn, organization_id, pipeline_id, category)
        if stage is not None:
            return stage
    return None


def _attach(uow: UnitOfWork, actor: Actor, lead: dict[str, Any], membership_id: uuid.UUID, via: str) -> None:
    """Links the locked, unconverted `lead` to the membership and lands it on its win stage."""
    conn = uow.connection
    conn.execute(
        update(leads)
        .where(
            leads.c.organization_id == actor.organization_id,
            leads.c.id == lead["id"],
            leads.c.converted_membership_id.is_(None),
        )
        .values(converted_membership_id=membership_id, updated_at=sql_now())
    )
    converted = {**lead, "converted_membership_id": membership_id}
    # A converted lead's deals link both the lead and the member.
    handle(conn, LeadBecameMember(uow, actor, lead["id"], membership_id))
    target = win_stage(conn, actor.organization_id, lead["pipeline_id"])
    if target is not None:
        update_lead(uow, actor, lead["id"], LeadUpdate(stage_id=target.id), locked=converted)
    record_activity(
        conn,
        actor.organization_id,
        lead["id"],
        MEMBER_LINKED,
        {"membershipId": str(membership_id), "via": via},
        actor.user_id,
    )


def _lock_unconverted(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The lead row locked; 404 for another organization's, 400 LEAD_ALREADY_CONVERTED once converted."""
    row = lock_lead(conn, organization_id, lead_id)
    if is_converted(row["status"], row["converted_membership_id"]):
        raise _already_converted()
    return row


# --- G4 convert -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertCommand:
    first_name: str
    last_name: str | None
    email: str
    role: Role = Role.MEMBER


@dataclass(frozen=True)
class Converted:
    membership_id: uuid.UUID
    user_id: uuid.UUID
    role: Role
    status: MembershipStatus


@dataclass(frozen=True)
class ExistingMember:
    """The email is an active member's already: nothing was written; link-member is the write."""

    membership_id: uuid.UUID
    first_name: str | None
    last_name: str | None


def convert_lead(
    uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, command: ConvertCommand
) -> Converted | ExistingMember:
    """G4. Converts the lead into a member of the actor's organization.

    - 404 LEAD_NOT_FOUND; 400 LEAD_ALREADY_CONVERTED (checked under the lead's lock, so of two simultaneous
      converts exactly one creates a membership);
    - the email's account user is an active member here: `ExistingMember`, nothing written;
    - they have a live membership that is not active: 400 ALREADY_A_MEMBER;
    - otherwise the user is found or created (race-safe on `uq_users_account_lower_email`), an active
      membership with `source_lead_id` is created, the lead is attached, and `membership.activated` is emitted.
    """
    conn = uow.connection
    organization_id = actor.organization_id
    lead = _lock_unconverted(conn, organization_id, lead_id)
    email = canonical_email(command.email)
    if email is None:
        raise BadRequest("An email is required to convert a lead.", code="VALIDATION_FAILED")

    user_id = _account_user_by_email(conn, email)
    if user_id is not None:
        existing = _existing_membership(conn, organization_id, user_id)
        if existing is not None:
            return existing
    else:
        user_id = _find_or_create_account_user(conn, command)

    membership_id = conn.execute(
        pg_insert(memberships)
        .values(
            id=uuid7(),
            organization_id=organization_id,
            user_id=user_id,
            role=command.role.value,
            status=MembershipStatus.ACTIVE.value,
            source_lead_id=lead_id,
        )
        # A convert of another lead with the same email got there first (the live-membership unique index).
        .on_conflict_do_nothing(
            index_elements=[memberships.c.organization_id, memberships.c.user_id],
            index_where=memberships.c.deleted_at.is_(None),
        )
        .returning(memberships.c.id)
    ).scalar()
    if membership_id is None:
        existing = _existing_membership(conn, organization_id, user_id)
        if existing is not None:
            return existing
        raise _already_a_member()  # pragma: no cover - the conflicting row was soft-deleted meanwhile

    _attach(uow, actor, lead, membership_id, VIA_CONVERT)
    uow.add_event(
        DomainEvent(
            type=MEMBERSHIP_ACTIVATED,
            organization_id=organization_id,
            aggregate_id=membership_id,
            payload={
                "source": LEAD_CONVERTED_SOURCE,
                "organizationId": str(organization_id),
                "userId": str(user_id),
                "membershipId": str(membership_id),
                "role": command.role.value,
                "leadId": str(lead_id),
            },
        )
    )
    return Converted(membership_id=membership_id, user_id=user_id, role=command.role, status=MembershipStatus.ACTIVE)


def _already_a_member() -> BadRequest:
    return BadRequest("User is already a member of this organization", code="ALREADY_A_MEMBER")


def _account_user_by_email(conn: Connection, email: str) -> uuid.UUID | None:
    """The account user with this email (any case); managed users share parents' emails and never count."""
    return conn.execute(
        select(users.c.id).where(func.lower(users.c.email) == email, users.c.kind == ACCOUNT, users.c.email.isnot(None))
    ).scalar_one_or_none()


def _existing_membership(conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID) -> ExistingMember | None:
    """The user's live membership here: `ExistingMember` when active, 400 ALREADY_A_MEMBER when not, None when
    there is none."""
    row = conn.execute(
        select(memberships.c.id, memberships.c.status, users.c.first_name, users.c.last_name)
        .join(users, users.c.id == memberships.c.user_id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.user_id == user_id,
            memberships.c.deleted_at.is_(None),
        )
    ).first()
    if row is None:
        return None
    if row.status != MembershipStatus.ACTIVE.value:
        raise _already_a_member()
    return ExistingMember(membership_id=row.id, first_name=row.first_name, last_name=row.last_name)


def _find_or_create_account_user(conn: Connection, command: ConvertCommand) -> uuid.UUID:
    """A new account user, or the one a concurrent request created with the same email a moment ago.

    INSERT … ON CONFLICT DO NOTHING waits for a concurrent insert of the same email to commit or roll back,
    and the SELECT after it (a new statement under READ COMMITTED) sees the winner's row.
    """
    email_key = func.lower(users.c.email)
    created = conn.execute(
        pg_insert(users)
        .values(
            id=uuid7(),
            email=command.email.strip(),
            first_name=command.first_name,
            last_name=command.last_name,
            kind=ACCOUNT,
        )
        .on_conflict_do_nothing(
            index_elements=[email_key],
            index_where=(users.c.kind == ACCOUNT) & users.c.email.isnot(None),
        )
        .returning(users.c.id)
    ).scalar()
    if created is not None:
        return created
    found = _account_user_by_email(conn, canonical_email(command.email) or "")
    if found is None:  # pragma: no cover - the conflicting insert rolled back between the two statements
        raise BadRequest("The user could not be created; try again.", code="USER_CREATE_RACE")
    return found


# --- link to an existing member ---------------------------------------------------------------------------


def link_lead_to_member(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID, membership_id: uuid.UUID) -> uuid.UUID:
    """Links the lead to an existing membership of the organization (spec "Convert onto an existing member").

    404 LEAD_NOT_FOUND / MEMBERSHIP_NOT_FOUND (another organization's or a soft-deleted membership);
    400 MEMBER_NOT_ACTIVE; 400 LEAD_ALREADY_CONVERTED. No `membership.activated`.
    """
    conn = uow.connection
    lead = _lock_unconverted(conn, actor.organization_id, lead_id)
    status = conn.execute(
        select(memberships.c.status)
        .where(
            memberships.c.organization_id == actor.organization_id,
            memberships.c.id == membership_id,
            memberships.c.deleted_at.is_(None),
        )
        # The membership cannot be cancelled or deleted between this check and the link.
        .with_for_update(read=True)
    ).scalar_one_or_none()
    if status is None:
        raise _membership_not_found()
    if status != MembershipStatus.ACTIVE.value:
        raise BadRequest("Member is not active", code="MEMBER_NOT_ACTIVE")
    _attach(uow, actor, lead, membership_id, VIA_LINK)
    return membership_id


# --- link candidates --------------------------------------------------------------------------------------


def link_candidates_for_lead(
    conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, search: str | None
) -> list[dict[str, Any]]:
    """The members this lead may be: by the lead's email/phone, or by `search` when given; [] once converted.

    404 LEAD_NOT_FOUND for a lead that is not the organization's.
    """
    lead = conn.execute(
        select(leads.c.email, leads.c.phone, leads.c.status, leads.c.converted_membership_id).where(
            leads.c.organization_id == organization_id, leads.c.id == lead_id
        )
    ).first()
    if lead is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    if is_converted(lead.status, lead.converted_membership_id):
        return []
    if search is not None:
        if not search_terms(search):
            return []
        return search_link_candidates(conn, organization_id, search)
    region = organization_region(conn, organization_id)
    return link_candidates(conn, organization_id, lead.email, lead.phone, default_region=region)


# --- platform events --------------------------------------------------------------------------------------


def attach_on_self_signup(
    uow: UnitOfWork, organization_id: uuid.UUID, user_id: uuid.UUID, membership_id: uuid.UUID
) -> uuid.UUID | None:
    """A person signed up on their own: their lead (if `find_lead_for_person` finds one) becomes theirs.

    The membership must be this user's, live and active here; managed users never match. A lead already
    converted, or a membership already linked to a lead, is left alone: a redelivery changes nothing.
    Returns the lead linked now, or None.
    """
    conn = uow.connection
    active = conn.execute(
        select(memberships.c.id).where(
            memberships.c.organization_id == organization_id,
            memberships.c.id == membership_id,
            memberships.c.user_id == user_id,
            memberships.c.deleted_at.is_(None),
            memberships.c.status == MembershipStatus.ACTIVE.value,
        )
    ).first()
    if active is None or _lead_of_membership(conn, organization_id, membership_id) is not None:
        return None
    region = organization_region(conn, organization_id)
    person = person_for_user(conn, user_id, default_region=region)
    if person is None:
        return None
    lead_id = find_lead_for_person(conn, organization_id, person.key, default_region=region, user_id=user_id)
    if lead_id is None:
        return None
    lead = lock_lead(conn, organization_id, lead_id)
    # Re-checked under the lock: a concurrent delivery of the same signup may have linked it meanwhile.
    if is_converted(lead["status"], lead["converted_membership_id"]):
        return None
    _attach(uow, system_actor(organization_id), lead, membership_id, VIA_SELF_SIGNUP)
    return lead_id


def _lead_of_membership(conn: Connection, organization_id: uuid.UUID, membership_id: uuid.UUID) -> uuid.UUID | None:
    return conn.execute(
        select(leads.c.id)
        .where(leads.c.organization_id == organization_id, leads.c.converted_membership_id == membership_id)
        .limit(1)
    ).scalar_one_or_none()


# --- the platform events as task_lifecycle delivers them --------------------------------------------------


