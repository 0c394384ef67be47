"""Is this person already a lead of the organization? (spec "Dedup is per-org")

Same organization, same email (case-insensitive) or the same phone number however it was typed. Only
this organization's leads are considered: the same person may be a lead of several organizations. Leads
are the only candidates, never users, so a managed member sharing a parent's phone or email is never
matched here ("Managed members").
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    Select,
    Subquery,
    Text,
    any_,
    func,
    literal,
    select,
    true,
    union,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from leadcrm.directory.rules import phone_region
from leadcrm.directory.tables import organizations
from leadcrm.leads.assignment import has_rules
from leadcrm.leads.pseudonym_tokens import OrganizationPseudonyms, any_pseudonym, find_pseudonymized
from leadcrm.leads.rules.identity import last_seven_digits
from leadcrm.leads.rules.intake import dedup_lock_keys, is_closed_lead, normalized_email, phone_digits, same_phone
from leadcrm.leads.tables import LEAD_EMAIL_KEY, LEAD_PHONE_KEY, leads
from leadcrm.pipelines.stages import StagePlacement, first_new_stage_of_default, placement_of

# Leads sharing an email or the last seven digits of a phone: a handful in practice, a bound in any case.
CANDIDATE_LIMIT = 50


@dataclass(frozen=True)
class ExistingLead:
    id: uuid.UUID
    name: str | None
    status: str
    archived_at: datetime | None
    converted_membership_id: uuid.UUID | None = None
    # A pseudonymized lead matched by its tokens: the person asked to be forgotten. Never reopened, and an
    # entry point keeps nothing of the submission (qualification.pseudonymize).
    suppressed: bool = False

    @property
    def is_closed(self) -> bool:
        return is_closed_lead(self.status, self.archived_at is not None)


@dataclass(frozen=True)
class IntakeContext:
    """What a create reads of its organization in the statement that takes its person lock (`open_intake`)."""

    features: Any
    pseudonyms: OrganizationPseudonyms  # its country and timezone too (the phone region)
    placement: StagePlacement | None  # the default pipeline's New stage; None until the pipeline is seeded
    # Whether the organization has an active assignment rule (leads.assignment): none costs no statement.
    has_assignment_rules: bool = False

    @property
    def timezone(self) -> str | None:
        return self.pseudonyms.timezone


def open_intake(
    conn: Connection, organization_id: uuid.UUID, email: str | None, phone: str | None
) -> IntakeContext | None:
    """`lock_person` and everything a create reads of the organization before its duplicate check, in one
    statement: the locks are the first columns (evaluated left to right, before the row is returned), then
    the organization's features, country, timezone, whether it has pseudonymized leads, and the stage a new
    lead lands on. None (no lock taken) when the organization does not exist.

    The duplicate check must stay a later statement: under READ COMMITTED a statement sees what was
    committed when it began, so a check in this statement would not see the lead of the create it waited for.
    """
    return _open(conn, organization_id, dedup_lock_keys(organization_id, email, phone))


def open_batch_intake(
    conn: Connection, organization_id: uuid.UUID, people: list[tuple[str | None, str | None]]
) -> IntakeContext | None:
    """`open_intake` for every (email, phone) of a batch of one organization's leads: all their person locks,
    in one global order (as `lock_people`), and the organization's data, in one statement."""
    return _open(conn, organization_id, _all_keys([(organization_id, email, phone) for email, phone in people]))


def _all_keys(people: list[tuple[uuid.UUID, str | None, str | None]]) -> list[int]:
    return sorted(
        {key for organization_id, email, phone in people for key in dedup_lock_keys(organization_id, email, phone)}
    )


def _open(conn: Connection, organization_id: uuid.UUID, keys: list[int]) -> IntakeContext | None:
    stage = first_new_stage_of_default(organization_id).lateral("default_stage")
    row = conn.execute(
        select(
            *(func.pg_advisory_xact_lock(key).label(f"lock_{n}") for n, key in enumerate(keys)),
            organizations.c.features,
            organizations.c.country_code,
            organizations.c.timezone,
            any_pseudonym(organization_id).label("has_pseudonyms"),
            stage.c.pipeline_id,
            stage.c.id.label("stage_id"),
            stage.c.category,
            has_rules(organizations.c.id).label("has_assignment_rules"),
        )
        .select_from(organizations.outerjoin(stage, true()))
        .where(organizations.c.id == organization_id)
    ).first()
    if row is None:
        return None
    return IntakeContext(
        features=row.features,
        pseudonyms=OrganizationPseudonyms(row.country_code, row.timezone, bool(row.has_pseudonyms)),
        placement=placement_of(row.pipeline_id, row.stage_id, row.category),
        has_assignment_rules=bool(row.has_assignment_rules),
    )


def lock_person(conn: Connection, organization_id: uuid.UUID, email: str | None, phone: str | None) -> None:
    """Serialize creates of the same person until this transaction ends.

    Taken before the duplicate check: of two identical submissions at once, the second waits here until the
    first commits, and its check (a later statement, so a fresh READ COMMITTED snapshot) sees the new lead.
    The keys are in a fixed order and PostgreSQL evaluates the select list left to right.
    """
    keys = dedup_lock_keys(organization_id, email, phone)
    if keys:
        conn.execute(select(*(func.pg_advisory_xact_lock(key) for key in keys)))


def lock_people(conn: Connection, people: list[tuple[uuid.UUID, str | None, str | None]]) -> None:
    """`lock_person` for every (organization, email, phone) of a batch, in one statement and one global
    order: a batch holds its people's locks until it ends, so two batches sharing people queue up on the
    first key they share instead of each holding what the other waits for."""
    keys = _all_keys(people)
    if keys:
        conn.execute(select(*(func.pg_advisory_xact_lock(key) for key in keys)))


@dataclass
class Candidate:
    """A lead of the organization that may be one of a batch's people (`same_person_candidates`); its status
    is kept current by the batch (a reopen changes it)."""

    id: uuid.UUID
    name: str | None
    email: str | None
    phone: str | None
    status: str
    archived_at: datetime | None
    converted_membership_id: uuid.UUID | None

    def as_existing(self) -> ExistingLead:
        return ExistingLead(self.id, self.name, self.status, self.archived_at, self.converted_membership_id)


def same_person_candidates(
    conn: Connection, organization_id: uuid.UUID, people: list[tuple[str | None, str | None]]
) -> list[Candidate]:
    """`find_same_person`'s candidates for every (email, phone) of a batch in one statement, oldest first:
    the organization's leads sharing an email (case-insensitive) or a phone's last seven digits with one of
    them. Match each person with `match_candidate`; call `lock_people` first."""
    emails, sevens = set(), set()
    for email, phone in people:
        if (email_key := normalized_email(email)) is not None:
            emails.add(email_key)
        last7 = last_seven_digits(phone)
        if last7 is None:
            last7 = phone_digits(phone)
        if last7 is not None:
            sevens.add(last7)
    if not emails and not sevens:
        return []
    rows = conn.execute(_oldest_matching(organization_id, emails, sevens, CANDIDATE_LIMIT * len(people))).all()
    return [Candidate(*row) for row in rows]


_CANDIDATE_COLUMNS = (
    leads.c.id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.status,
    leads.c.archived_at,
    leads.c.converted_membership_id,
)


def email_key_in(organization_id: uuid.UUID, emails: Iterable[str]) -> ColumnElement[bool]:
    """The organization's leads with one of these emails (`normalized_email`: lower case) by ix_leads_email_key
    alone (the key names the organization: no other index on organization_id can be picked for it, migration
    0034). For a few keys (a ticket's requester, a bounce's recipients); many go through `leads_with_keys`."""
    return any_(_texts(f"{organization_id} {email}" for email in emails)) == LEAD_EMAIL_KEY


def phone_key_in(organization_id: uuid.UUID, sevens: Iterable[str]) -> ColumnElement[bool]:
    """The organization's leads whose phone ends with one of these seven digits, by ix_leads_phone_key alone."""
    return any_(_texts(f"{organization_id} {seven}" for seven in sevens)) == LEAD_PHONE_KEY


def _texts(values: Iterable[str]) -> ColumnElement[list[str]]:
    return literal(list(values), ARRAY(Text))


def leads_with_keys(
    organization_id: uuid.UUID, emails: Iterable[str], sevens: Iterable[str], columns: Sequence[Column[Any]]
) -> Subquery:
    """The organization's leads whose email (`normalized_email`) is one of `emails` or whose phone's last seven
    digits are one of `sevens`: `columns` and created_at, up to CANDIDATE_LIMIT a key, by one probe of dedup's
    key index per key (LEAD_EMAIL_KEY, LEAD_PHONE_KEY: each key names the organization, so no other index on
    organization_id can be picked for an organization the statistics misjudge, migration 0034). A LATERAL
    probe with a LIMIT stays a probe whatever the number of keys: asked as one `= ANY(keys)`, a thousand keys
    (an import's chunk) were read by a scan of the whole table, the planner's costs preferring it."""
    with_created_at = any(column is leads.c.created_at for column in columns)
    selected = tuple(columns) if with_created_at else (*columns, leads.c.created_at)
    probes = []
    prefix = literal(f"{organization_id} ", Text)
    for indexed, values in ((LEAD_EMAIL_KEY, emails), (LEAD_PHONE_KEY, sevens)):
        if not (keys := sorted(set(values))):
            continue
        # One JSON parameter: pg8000 writes a list as an array literal in Python, ~5 ms for a chunk's keys.
        key = func.jsonb_array_elements_text(literal(keys, JSONB)).table_valued("value")
        key = key.render_derived(name="key")
        # The oldest of a key's leads first: dedup resolves to the oldest lead.
        probe = select(*selected).where(indexed == prefix.concat(key.c.value))
        probe = probe.order_by(leads.c.created_at, leads.c.id).limit(CANDIDATE_LIMIT).lateral("probe")
        probes.append(select(probe).select_from(key).join(probe, true()))
    if not probes:
        raise ValueError("leads_with_keys needs an email or a phone key")
    return (probes[0] if len(probes) == 1 else union(*probes)).subquery("matching")


def _oldest_matching(
    organization_id: uuid.UUID, emails: Iterable[str], sevens: Iterable[str], limit: int, *extra: Any
) -> Select[Any]:
    found = leads_with_keys(organization_id, emails, sevens, _CANDIDATE_COLUMNS)
    return (
        select(*(found.c[column.name] for column in _CANDIDATE_COLUMNS), *extra)
        .order_by(found.c.created_at, found.c.id)
        .limit(limit)
    )


def match_candidate(
    candidates: list[Candidate], email: str | None, phone: str | None, region: str | None
) -> Candidate | None:
    """The oldest candidate with this email or this phone number (read in the organization's region), as
    `find_same_person` matches them."""
    email_key = normalized_email(email)
    if email_key is None and phone_digits(phone) is None:
        return None
    for candidate in candidates:
        if (email_key is not None and normalized_email(candidate.email) == email_key) or same_phone(
            phone, candidate.phone, region
        ):
            return candidate
    return None


def find_same_person(
    conn: Connection,
    organization_id: uuid.UUID,
    email: str | None,
    phone: str | None,
    *,
    context: IntakeContext | None = None,
) -> ExistingLead | None:
    """The organization's oldest lead with this email or this phone number, if any (else a pseudonymized lead
    whose tokens match: dedup suppression, see qualification.pseudonymize). Call `lock_person`
    first in the same transaction when a create depends on the answer.

    One query: candidates prefiltered by index on lower(email) and on the phone's last seven digits, with
    the organization's country and timezone beside them (unless `context` has them: `open_intake`); the phone
    is then compared in E.164 here, read in the organization's phone region (its country, else its
    timezone's: directory.rules.phone_region)."""
    email_key, last7 = normalized_email(email), last_seven_digits(phone)
    if last7 is None and (digits := phone_digits(phone)) is not None:
        last7 = digits  # a short number: matched digit for digit
    if email_key is None and last7 is None:
        return None
    this_organization = organizations.c.id == organization_id
    if context is not None:
        country: Any = literal(context.pseudonyms.country_code, Text)
        timezone: Any = literal(context.pseudonyms.timezone, Text)
    else:
        country = select(organizations.c.country_code).where(this_organization).scalar_subquery()
        timezone = select(organizations.c.timezone).where(this_organization).scalar_subquery()
    rows = conn.execute(
        _oldest_matching(
            organization_id,
            [email_key] if email_key is not None else [],
            [last7] if last7 is not None else [],
            CANDIDATE_LIMIT,
            country.label("country_code"),
            timezone.label("timezone"),
        )
    ).all()
    for row in rows:
        same_email = email_key is not None and normalized_email(row.email) == email_key
        if same_email or same_phone(phone, row.phone, phone_region(row.country_code, row.timezone)):
            return ExistingLead(
                id=row.id,
                name=row.name,
                status=row.status,
                archived_at=row.archived_at,
                converted_membership_id=row.converted_membership_id,
            )
    suppressed = find_pseudonymized(
        conn, organization_id, email, phone, known=context.pseudonyms if context is not None else None
    )
    if suppressed is not None:
        return ExistingLead(id=suppressed.id, name=None, status=suppressed.status, archived_at=None, suppressed=True)
    return None
