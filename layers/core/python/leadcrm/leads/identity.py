"""Finding people in the database: the lead an automated write is about, and the members a lead may be.

Two deliberately different strictnesses (spec "Automated writes match on a person, not a field" vs "Link
candidates are offered before staff type anything"):

- `find_lead_for_person` decides alone (self-signup, released joins, course purchases), so it asks
  `leads.rules.identity.is_same_lead_person` and never matches on a bare email OR phone;
- `link_candidates` / `search_link_candidates` only list members for a person to choose from, so a shared
  family number shows everyone on it.

Both consider only account users: a managed user (a child) shares a parent's phone or email and must never
be matched (spec "Managed members"). Candidates are prefiltered in SQL on lower(email) and on the phone's last
seven digits (the `ix_leads_phone_key` index), then compared exactly here, on E.164.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Text, and_, cast, func, literal, or_, select, true

from leadcrm.directory.queries import organization_phone_region
from leadcrm.directory.rules import MembershipStatus
from leadcrm.directory.tables import memberships, users
from leadcrm.leads.dedup import leads_with_keys
from leadcrm.leads.rules.identity import (
    PersonKey,
    canonical_email,
    is_same_lead_person,
    last_seven_digits,
    normalize_phone,
    person_key,
)
from leadcrm.leads.tables import leads

ACCOUNT = "account"
MAX_SEARCH_RESULTS = 20
# A search term with this many digits is (also) a phone number: 050-111-2233 finds +972501112233.
PHONE_TERM_MIN_DIGITS = 4

_NOT_A_DIGIT = re.compile(r"[^0-9]")


def organization_region(conn: Connection, organization_id: uuid.UUID) -> str | None:
    """The region phones without "+" are read in (e.g. "IL"): the organization's country, else its
    timezone's (directory.rules.phone_region)."""
    return organization_phone_region(conn, organization_id)


def _digits_of(column: Any) -> Any:
    return func.regexp_replace(func.coalesce(column, ""), "[^0-9]", "", "g")


def _last7_of_digits(digits_column: Any) -> Any:
    # In SQL what leads.rules.identity.last_seven_digits is in Python (for users; leads have LEAD_PHONE_KEY).
    return func.right(digits_column, 7)


# --- the person an automated write is about --------------------------------------------------------------


@dataclass(frozen=True)
class AccountPerson:
    """An account user as identity matching sees them."""

    user_id: uuid.UUID
    key: PersonKey


def person_for_user(conn: Connection, user_id: uuid.UUID, *, default_region: str | None) -> AccountPerson | None:
    """The user as a `PersonKey`, or None for an unknown or managed user: managed users never match a lead."""
    row = conn.execute(
        select(users.c.email, users.c.phone, users.c.first_name, users.c.last_name, users.c.kind).where(
            users.c.id == user_id
        )
    ).first()
    if row is None or row.kind != ACCOUNT:
        return None
    name = " ".join(part.strip() for part in (row.first_name, row.last_name) if part and part.strip())
    return AccountPerson(user_id, person_key(row.email, row.phone, name or None, default_region=default_region))


def find_lead_for_person(
    conn: Connection,
    organization_id: uuid.UUID,
    person: PersonKey,
    *,
    default_region: str | None,
    user_id: uuid.UUID | None = None,
) -> uuid.UUID | None:
    """The organization's oldest lead that is this person by `is_same_lead_person`, or None.

    `person` must be built from an account user (see `person_for_user`); pass that user as `user_id` so
    their own row does not count as "someone else on this phone". The people who can veto a phone match are
    the organization's other leads and its members' account users answering to the same E.164 number.
    """
    last7 = last_seven_digits(person.phone_e164)
    if person.email is None and last7 is None:
        return None
    found = leads_with_keys(
        organization_id,
        [person.email] if person.email is not None else [],
        [last7] if last7 is not None else [],
        (leads.c.id, leads.c.email, leads.c.phone, leads.c.name),
    )
    rows = conn.execute(
        select(found.c.id, found.c.email, found.c.phone, found.c.name).order_by(found.c.created_at, found.c.id)
    ).all()
    if not rows:
        return None
    candidates = [(row.id, person_key(row.email, row.phone, row.name, default_region=default_region)) for row in rows]
    others: list[PersonKey] = []
    if person.phone_e164 is not None and last7 is not None:
        others = [key for _, key in candidates if key.phone_e164 == person.phone_e164]
        others += _member_users_on_phone(conn, organization_id, last7, person.phone_e164, default_region, user_id)
    for lead_id, lead_key in candidates:
        others_than_this_lead = [other for other in others if other is not lead_key]
        if is_same_lead_person(person, lead_key, others_than_this_lead):
            return lead_id
    return None


def _member_users_on_phone(
    conn: Connection,
    organization_id: uuid.UUID,
    last7: str,
    phone_e164: str,
    default_region: str | None,
    exclude_user_id: uuid.UUID | None,
) -> list[PersonKey]:
    """Account users with a live membership here whose phone is exactly `phone_e164`."""
    query = (
        select(users.c.id, users.c.email, users.c.phone, users.c.first_name, users.c.last_name)
        .join(memberships, memberships.c.user_id == users.c.id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.deleted_at.is_(None),
            users.c.kind == ACCOUNT,
            _last7_of_digits(_digits_of(users.c.phone)) == last7,
        )
    )
    if exclude_user_id is not None:
        query = query.where(users.c.id != exclude_user_id)
    people = []
    for row in conn.execute(query):
        name = " ".join(part for part in (row.first_name, row.last_name) if part) or None
        key = person_key(row.email, row.phone, name, default_region=default_region)
        if key.phone_e164 == phone_e164:
            people.append(key)
    return people


# --- members a lead may be (staff choose) ----------------------------------------------------------------

_CANDIDATE_COLUMNS = (
    memberships.c.id.label("membership_id"),
    users.c.id.label("user_id"),
    users.c.first_name,
    users.c.last_name,
    users.c.email,
    users.c.phone,
)


def _active_account_members(organization_id: uuid.UUID) -> Any:
    """Active, live memberships of account users in the organization, with the user's contact columns."""
    return (
        select(*_CANDIDATE_COLUMNS, memberships.c.created_at)
        .join(users, users.c.id == memberships.c.user_id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.deleted_at.is_(None),
            memberships.c.status == MembershipStatus.ACTIVE.value,
            users.c.kind == ACCOUNT,
        )
    )


def _candidate(row: Any, matched_by: str) -> dict[str, Any]:
    return {
        "membership_id": row.membership_id,
        "user_id": row.user_id,
        "first_name": row.first_name,
        "last_name": row.last_name,
        "email": row.email,
        "phone": row.phone,
        "matched_by": matched_by,
    }


def link_candidates(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_email: str | None,
    lead_phone: str | None,
    *,
    default_region: str | None,
) -> list[dict[str, Any]]:
    """Active members sharing the lead's canonical email or phone: email matches first, then phone matches
    (each oldest membership first); a member found by both is listed once, as an email match."""
    email = canonical_email(lead_email)
    phone = normalize_phone(lead_phone, default_region)
    last7 = last_seven_digits(phone)
    if email is None and last7 is None:
        return []
    prefilter = []
    if email is not None:
        prefilter.append(func.lower(func.trim(users.c.email)) == email)
    if last7 is not None:
        prefilter.append(_last7_of_digits(_digits_of(users.c.phone)) == last7)
    rows = conn.execute(
        _active_account_members(organization_id)
        .where(or_(*prefilter))
        .order_by(memberships.c.created_at, memberships.c.id)
    ).all()
    by_email = [_candidate(r, "email") for r in rows if email is not None and canonical_email(r.email) == email]
    emailed = {c["membership_id"] for c in by_email}
    by_phone = [
        _candidate(r, "phone")
        for r in rows
        if r.membership_id not in emailed and phone is not None and normalize_phone(r.phone, default_region) == phone
    ]
    return by_email + by_phone


def search_terms(search: str) -> list[str]:
    """The words of a roster search (blank-separated; at most 10, the rest are ignored)."""
    return search.split()[:10]


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_link_candidates(conn: Connection, organization_id: uuid.UUID, search: str) -> list[dict[str, Any]]:
    """Up to 20 active members where every term hits the first name, last name, email or phone.

    A term with 4+ digits also matches the stored phone by digits, with a leading trunk zero dropped, so
    "050-111-2233" finds "+972501112233" (the digits "501112233" are inside "972501112233").
    """
    conditions = []
    for term in search_terms(search):
        pattern = f"%{_escape_like(term)}%"
        hits = [
            users.c.first_name.ilike(pattern, escape="\\"),
            users.c.last_name.ilike(pattern, escape="\\"),
            users.c.email.ilike(pattern, escape="\\"),
            users.c.phone.ilike(pattern, escape="\\"),
        ]
        digits = _NOT_A_DIGIT.sub("", term)
        if len(digits) >= PHONE_TERM_MIN_DIGITS:
            national = digits.lstrip("0") or digits
            hits.append(func.strpos(_digits_of(users.c.phone), cast(literal(national), Text)) > 0)
        conditions.append(or_(*hits))
    if not conditions:
        return []
    rows = conn.execute(
        _active_account_members(organization_id)
        .where(and_(true(), *conditions))
        .order_by(users.c.first_name, users.c.last_name, memberships.c.id)
        .limit(MAX_SEARCH_RESULTS)
    ).all()
    return [_candidate(r, "search") for r in rows]
