"""Pseudonyms: keyed hashes that stand in for a person's email and phone after a pseudonymized erasure. Pure.

Each organization has its own key, derived from the master key (HMAC-SHA256 of the organization id), so a
token says nothing across organizations and the same person gets unrelated tokens in two of them. A token is
HMAC-SHA256 under the organization's key of the canonical value (leads.rules.identity: the trimmed lower-case
email; the E.164 phone) with its kind as a prefix, so an email and a phone never collide. Without the key the
value cannot be recovered or even tested; with it, only a value someone already has can be recognized.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass

from leadcrm.leads.rules.identity import canonical_email, normalize_phone


@dataclass(frozen=True)
class Tokens:
    email: str | None
    phone: str | None

    @property
    def any(self) -> bool:
        return self.email is not None or self.phone is not None


def organization_key(master_key: bytes, organization_id: uuid.UUID) -> bytes:
    return hmac.new(master_key, b"leadcrm-pseudonym:" + organization_id.bytes, hashlib.sha256).digest()


def token(org_key: bytes, kind: str, canonical: str) -> str:
    return hmac.new(org_key, f"{kind}:{canonical}".encode(), hashlib.sha256).hexdigest()


def tokens_for(
    master_key: bytes, organization_id: uuid.UUID, email: str | None, phone: str | None, *, region: str | None
) -> Tokens:
    """The tokens of a person's email and phone in one organization (None for a missing or unusable one)."""
    key = organization_key(master_key, organization_id)
    email_key = canonical_email(email)
    phone_key = normalize_phone(phone, region)
    return Tokens(
        email=token(key, "email", email_key) if email_key else None,
        phone=token(key, "phone", phone_key) if phone_key else None,
    )
