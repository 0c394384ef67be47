"""Rules of lead intake (G1 public capture, G2 staff create), without I/O.

- Dedup is per organization, by email (case-insensitive) or by phone: the same number however it was typed
  ("050-123 4567", "+972 50 123 4567"), compared in E.164 in the organization's region.
- Concurrent creates of the same person are serialized on advisory-lock keys derived from what identifies
  them, taken in one fixed order so two creates can never wait on each other in a cycle.
- The public boundary keeps only what the minisite's own surfaces send (spec G1 step 2).
- Throttling counts hits in fixed one-minute windows.
"""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from leadcrm.leads.rules.identity import last_seven_digits, normalize_phone
from leadcrm.leads.rules.returning import classify_return
from leadcrm.leads.rules.returning import is_closed_lead as is_closed_lead  # re-exported: dedup reads it here

_NOT_A_DIGIT = re.compile(r"[^0-9]")

# --- who a lead is ----------------------------------------------------------------------------------------


def normalized_email(email: str | None) -> str | None:
    """The email as dedup compares it (lower case, no surrounding blanks), or None when there is none."""
    if email is None:
        return None
    cleaned = email.strip().lower()
    return cleaned or None


def phone_digits(phone: str | None) -> str | None:
    """The digits of a phone as typed ("050-123 4567" -> "0501234567"), as `leads.phone_digits` stores them;
    None when there are none (a phone without digits identifies nobody)."""
    if phone is None:
        return None
    digits = _NOT_A_DIGIT.sub("", phone)
    return digits or None


def same_phone(a: str | None, b: str | None, default_region: str | None) -> bool:
    """The same number however each was typed: equal in E.164 (read in the organization's region), or, when
    either cannot be read as a number, equal digit for digit."""
    digits_a, digits_b = phone_digits(a), phone_digits(b)
    if digits_a is None or digits_b is None:
        return False
    e164_a, e164_b = normalize_phone(a, default_region), normalize_phone(b, default_region)
    if e164_a is not None and e164_b is not None:
        return e164_a == e164_b
    return digits_a == digits_b


def dedup_lock_keys(organization_id: uuid.UUID, email: str | None, phone: str | None) -> list[int]:
    """The `pg_advisory_xact_lock` keys for a create of this person, in the order they must be taken.

    One key per identifier (email, the phone's last seven digits), scoped to the organization. Seven digits
    survive every way a number is written, so "050-1234567" and "+972501234567" queue on the same key (two
    different numbers that share them merely wait for each other). Sorted, so every create takes its keys in
    the same global order: two creates sharing both identifiers queue up instead of deadlocking.
    """
    identities = []
    if (email_key := normalized_email(email)) is not None:
        identities.append(f"{organization_id}:email:{email_key}")
    if (last7 := last_seven_digits(phone)) is not None:
        identities.append(f"{organization_id}:phone7:{last7}")
    elif (digits := phone_digits(phone)) is not None:
        identities.append(f"{organization_id}:phone:{digits}")
    return sorted({_signed_64bit_hash(identity) for identity in identities})


def _signed_64bit_hash(text: str) -> int:
    # pg_advisory_xact_lock takes a bigint: 8 bytes of a stable hash, read as a signed integer.
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


class MatchResolution(StrEnum):
    """What a create does when the person is already a lead of the organization."""

    DUPLICATE = "duplicate"  # report the existing lead (409 on staff paths, a recorded resubmission on G1)
    REOPEN = "reopen"  # a closed lead came back through an entry point: reopen it (spec "Returning leads")


def resolve_match(
    status: str, archived: bool, *, converted_membership_id: uuid.UUID | None = None, entry_point: bool
) -> MatchResolution:
    """The one place a match with an existing lead is decided (spec "Dedup is per-org").

    A closed match (lost, frozen or archived) that arrives through an entry point (public capture, staff
    create, Meta and WhatsApp ingestion) is reopened instead of reported. A won lead never is. Paths that are
    not entry points on purpose (the CSV import: re-importing an old export must not reopen every lost lead
    at once) pass `entry_point=False` and keep reporting duplicates. The answer is read without the lead's
    row lock: `return_lead` re-checks under the lock, and a lead reopened meanwhile is a duplicate again.
    """
    kind = classify_return(status, archived=archived, converted_membership_id=converted_membership_id)
    return MatchResolution.REOPEN if entry_point and kind.reopens else MatchResolution.DUPLICATE


# --- the public boundary ----------------------------------------------------------------------------------

# The refs the minisite's own surfaces send, and the name their campaign hook is minted with. Anything else
# is dropped (not refused): a public caller cannot mint dashboard buckets, and the visitor's enquiry is
# still received.
PUBLIC_CAMPAIGN_REFS: dict[str, str] = {
    "lead-popup": "Minisite lead popup",
    "contact-form": "Minisite contact form",
}
MINISITE_CHANNEL = "minisite"
MINISITE_EVENT_CHANNEL = "minisite_event"


def accepted_campaign_ref(ref: str | None) -> str | None:
    """The campaignRef when it is one of the minisite's own surfaces, else None (dropped)."""
    return ref if ref in PUBLIC_CAMPAIGN_REFS else None


# --- the auto-task ----------------------------------------------------------------------------------------

CONTACT_TASK_TITLE_PREFIX = "Contact new lead: "
MAX_TASK_TITLE_LENGTH = 255


def contact_task_title(name: str | None, email: str | None, phone: str | None) -> str:
    """`Contact new lead: <name or email or phone>` (G1 step 7), bounded to a title's length."""
    who = next((value.strip() for value in (name, email, phone) if value and value.strip()), "")
    return (CONTACT_TASK_TITLE_PREFIX + who)[:MAX_TASK_TITLE_LENGTH].rstrip()


# --- throttling -------------------------------------------------------------------------------------------

RATE_WINDOW = timedelta(minutes=1)


def rate_window_start(at: datetime) -> datetime:
    """The start of the fixed one-minute window `at` falls in (UTC)."""
    return at.astimezone(UTC).replace(second=0, microsecond=0)


def retry_after_seconds(window_start: datetime, at: datetime) -> int:
    """Whole seconds until the window ends (what Retry-After says): at least 1, at most the window."""
    remaining = (window_start + RATE_WINDOW - at).total_seconds()
    return max(1, min(int(RATE_WINDOW.total_seconds()), math.ceil(remaining)))


def over_limit(hits: int, limit: int) -> bool:
    """The request that makes `hits` in its window is refused when that exceeds the limit."""
    return hits > limit
