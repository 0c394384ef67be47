"""The pseudonym master key and the dedup lookup by token (leads.rules.pseudonyms makes the tokens).

The key is read from Secrets Manager (PSEUDONYM_SECRET_ARN, a secret whose string is the key, or JSON
{"key": …}) through Powertools Parameters, kept for MAX_AGE_SECONDS; or, locally and in tests, from
PSEUDONYM_KEY. Without either, pseudonymization is refused (503) and dedup simply has no tokens to compare:
a missing key never falls back to a known one. (The functions that read it require one of the two at cold
start in Lambda: leadcrm.platform.environment.PSEUDONYM_KEY.)
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, or_, select

from leadcrm.directory.rules import phone_region
from leadcrm.directory.tables import organizations
from leadcrm.leads.rules.pseudonyms import Tokens, tokens_for
from leadcrm.leads.tables import lead_pseudonyms, leads
from leadcrm.platform.adapters.secrets import CachedSecrets

MAX_AGE_SECONDS = 300

_secret = CachedSecrets(MAX_AGE_SECONDS)


def master_key() -> bytes | None:
    arn = os.environ.get("PSEUDONYM_SECRET_ARN")
    if arn:
        return key_from_secret(_secret.get(arn))
    local = os.environ.get("PSEUDONYM_KEY")
    return local.encode() if local else None


def key_from_secret(secret: str) -> bytes | None:
    """The key a secret string holds: the string itself, or the `key` of a JSON object; None when empty."""
    try:
        parsed = json.loads(secret)
    except ValueError:
        parsed = secret
    value = parsed.get("key") if isinstance(parsed, dict) else parsed
    return str(value).encode() if value else None


def forget() -> None:
    """Drop the cached key (tests switch keys and environments between runs)."""
    _secret.forget()


def person_tokens(
    organization_id: uuid.UUID, email: str | None, phone: str | None, region: str | None
) -> Tokens | None:
    key = master_key()
    if key is None:
        return None
    return tokens_for(key, organization_id, email, phone, region=region)


@dataclass(frozen=True)
class PseudonymizedLead:
    id: uuid.UUID
    status: str


def find_pseudonymized(
    conn: Connection,
    organization_id: uuid.UUID,
    email: str | None,
    phone: str | None,
    *,
    known: OrganizationPseudonyms | None = None,
) -> PseudonymizedLead | None:
    """The organization's pseudonymized lead whose email or phone token matches, if any (dedup suppression).

    One statement when the organization has no pseudonymized lead (the usual case), two when it has; none and
    one when an earlier statement of the unit read `known` (`has_pseudonyms`, with the organization)."""
    if not (email or phone):
        return None
    if known is None:
        has_pseudonyms = select(lead_pseudonyms.c.lead_id).where(lead_pseudonyms.c.organization_id == organization_id)
        org = conn.execute(
            select(organizations.c.country_code, organizations.c.timezone, has_pseudonyms.exists().label("any")).where(
                organizations.c.id == organization_id
            )
        ).first()
        if org is None:
            return None
        known = OrganizationPseudonyms(org.country_code, org.timezone, org.any)
    if not known.any:
        return None
    tokens = person_tokens(organization_id, email, phone, phone_region(known.country_code, known.timezone))
    if tokens is None or not tokens.any:
        return None
    matches = []
    if tokens.email is not None:
        matches.append(lead_pseudonyms.c.email_token == tokens.email)
    if tokens.phone is not None:
        matches.append(lead_pseudonyms.c.phone_token == tokens.phone)
    row = conn.execute(
        select(leads.c.id, leads.c.status)
        .select_from(lead_pseudonyms.join(leads, leads.c.id == lead_pseudonyms.c.lead_id))
        .where(lead_pseudonyms.c.organization_id == organization_id, or_(*matches))
        .order_by(leads.c.created_at, leads.c.id)
        .limit(1)
    ).first()
    return PseudonymizedLead(row.id, row.status) if row else None


@dataclass(frozen=True)
class OrganizationPseudonyms:
    """What suppression needs of the organization: its phone region's inputs, and whether it has any
    pseudonymized lead at all."""

    country_code: str | None
    timezone: str | None
    any: bool


def any_pseudonym(organization_id: uuid.UUID) -> Any:
    """SQL: whether the organization has a pseudonymized lead (for a statement that reads the organization)."""
    return select(lead_pseudonyms.c.lead_id).where(lead_pseudonyms.c.organization_id == organization_id).exists()
