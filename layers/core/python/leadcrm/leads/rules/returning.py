"""Returning leads (spec "Returning leads"): when a closed lead comes back, and what its reopen changes.

Pure rules; `leads.returning.return_lead` reads the locked lead row, asks here, and writes.

- Closed = lost, frozen or archived. Won (converted / customer, or linked to a membership) is never
  reopened: it is a member or a buyer, not a prospect — even when it is also archived.
- A lost or frozen lead goes back to a `new` stage; an archived lead that was still open (a booked trial,
  say) is only unarchived and keeps its stage and status.
- The entry point's note is appended, skipping a repeat of the sentence the note already ends with. The
  service does this in SQL (`note_sql` in leads.returning) so simultaneous returns cannot overwrite each
  other; `append_note` here is the same rule in Python, and a test holds the two to the same answers.
- Contact fields are filled only where the lead has none; the campaign only when the lead has none; an
  owner only when the lead has none.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from leadcrm.leads.rules.moves import is_converted
from leadcrm.pipelines.rules.statuses import StageCategory, is_closed, is_won

# The timeline entry (lead_activity_events.type) a reopen writes, and the outbox event it emits besides
# lead.status_changed: the seam the follow-up task sync (the tasks issue) subscribes to.
LEAD_RETURNED_ACTIVITY = "lead_returned"
LEAD_RETURNED_EVENT = "lead.returned"
# A returned lead is due a call now (next_action_type); the previous life's follow-up is dropped.
RETURN_CALL = "call"


class ReturnVia(StrEnum):
    """The entry point a closed lead came back through (leads.returned_via)."""

    PUBLIC_CAPTURE = "public_capture"
    STAFF_CREATE = "staff_create"
    META = "meta"
    WHATSAPP = "whatsapp"
    JOIN_RELEASED = "join_released"
    STAFF_REOPEN = "staff_reopen"


class ReturnKind(StrEnum):
    """What a return does to a lead, decided on the row read under its lock."""

    TO_NEW_STAGE = "to_new_stage"  # lost or frozen (archived or not): back to a new stage
    IN_PLACE = "in_place"  # archived while still open: unarchived, stage and status kept
    ALREADY_OPEN = "already_open"  # not closed: nothing to reopen
    WON = "won"  # converted / customer / linked to a membership: never reopened

    @property
    def reopens(self) -> bool:
        return self in (ReturnKind.TO_NEW_STAGE, ReturnKind.IN_PLACE)


def is_won_lead(status: StageCategory | str, converted_membership_id: uuid.UUID | None = None) -> bool:
    """A member or a buyer: a won stage, or a lead convert linked to a membership (wherever it sits now)."""
    return is_won(StageCategory(status)) or is_converted(status, converted_membership_id)


def is_closed_lead(status: StageCategory | str, archived: bool) -> bool:
    """Closed = lost, frozen or archived (spec "Returning leads"). A won lead is not closed unless archived,
    and even then `classify_return` never reopens it."""
    return archived or is_closed(StageCategory(status))


def classify_return(
    status: StageCategory | str, *, archived: bool, converted_membership_id: uuid.UUID | None = None
) -> ReturnKind:
    """What coming back does to a lead in this state."""
    if is_won_lead(status, converted_membership_id):
        return ReturnKind.WON
    if is_closed(StageCategory(status)):
        return ReturnKind.TO_NEW_STAGE
    if archived:
        return ReturnKind.IN_PLACE
    return ReturnKind.ALREADY_OPEN


# --- the note ---------------------------------------------------------------------------------------------

# Appended notes go on a line of their own.
NOTE_SEPARATOR = "\n"
# Trailing characters that do not make a sentence different: "Wants a trial." repeats "Wants a trial".
SENTENCE_TRAILER = " \t\r\n.!?…"
# What must precede a repeated sentence for it to be a whole sentence of the note and not the tail of a
# longer one ("… I want a trial" does not end with the sentence "want a trial"): the note's start, a
# sentence end and blanks, or a line break. The same pattern is used in PostgreSQL (`~`, where `$` is the
# end of the text) and in Python (`re.search`).
SENTENCE_START_BEFORE = r"(^\s*|[.!?…]\s+|\n\s*)$"
_SENTENCE_START_BEFORE = re.compile(SENTENCE_START_BEFORE)


def sentence_core(text: str | None) -> str:
    """The text as sentences are compared: surrounding blanks and trailing punctuation removed."""
    return (text or "").strip().rstrip(SENTENCE_TRAILER)


def ends_with_sentence(note: str | None, sentence: str | None) -> bool:
    """Whether the note already ends with this sentence (whole, trailing punctuation ignored). A sentence
    with no words is always "there": it is never appended."""
    wanted = sentence_core(sentence)
    if not wanted:
        return True
    core = (note or "").rstrip(SENTENCE_TRAILER)
    if not core.endswith(wanted):
        return False
    return _SENTENCE_START_BEFORE.search(core[: len(core) - len(wanted)]) is not None


def append_note(note: str | None, addition: str | None) -> str | None:
    """The note after the entry point's note is appended; None when it stays as it is."""
    if ends_with_sentence(note, addition):
        return None
    added = (addition or "").strip()
    if not (note or "").strip():
        return added
    return f"{note}{NOTE_SEPARATOR}{added}"


# --- the touch: what the entry point brought --------------------------------------------------------------


@dataclass(frozen=True)
class ReturnTouch:
    """What the entry point that brought the lead back was sent (the person's words and contact details)."""

    note: str | None = None
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    campaign_id: uuid.UUID | None = None


@dataclass(frozen=True)
class LeadFacts:
    """What the reopen rules read from the locked lead row."""

    name: str | None
    email: str | None
    phone: str | None
    campaign_id: uuid.UUID | None
    assigned_to_user_id: uuid.UUID | None


def _blank(value: str | None) -> bool:
    return value is None or not value.strip()


def filled_fields(lead: LeadFacts, touch: ReturnTouch) -> dict[str, object]:
    """The columns a return sets besides the note: empty name / email / phone from the touch (an existing
    value is never overwritten), and the touch's campaign when the lead has none."""
    changes: dict[str, object] = {}
    for column in ("name", "email", "phone"):
        given = getattr(touch, column)
        if _blank(getattr(lead, column)) and not _blank(given):
            changes[column] = given.strip()
    if lead.campaign_id is None and touch.campaign_id is not None:
        changes["campaign_id"] = touch.campaign_id
    return changes


def owner_after_return(
    current_owner: uuid.UUID | None, sales_owner: uuid.UUID | None, default_assignee: uuid.UUID | None
) -> uuid.UUID | None:
    """Who owns the lead after it came back: an existing owner stays; an unowned lead gets the Sales actor
    (on staff paths), else the organization's default assignee, else stays unowned."""
    if current_owner is not None:
        return current_owner
    return sales_owner or default_assignee


# --- the platform's released joins ------------------------------------------------------------------------

MEMBERSHIP_JOIN_RELEASED = "membership.join_released"
# A person who started joining online and whose join was released (not completed): a recovered signup.
JOIN_RELEASED_NOTE = "Started joining online; the join was released before it was completed."
JOIN_RELEASED_SOURCE = "self_signup"
# The timeline entry that records each release once (its source_event_id is the release key).
SIGNUP_RELEASED_ACTIVITY = "signup_released"
_RELEASE_KEYS = uuid.UUID("5b0f6c2e-8d7a-4c1e-9a53-2f6d1c0e7b41")


@dataclass(frozen=True)
class JoinRelease:
    """`membership.join_released` as the platform posts it: {organizationId, userId, membershipId?,
    releasedAt?}. Ids are UUIDs; releasedAt an ISO-8601 time (kept as given when it parses)."""

    organization_id: uuid.UUID
    user_id: uuid.UUID
    membership_id: uuid.UUID | None = None
    released_at: datetime | None = None

    @property
    def key(self) -> uuid.UUID:
        """The same release, however often it is delivered, has the same key: per membership (one join, one
        release) or, without a membership id, per user and release time."""
        if self.membership_id is not None:
            name = f"{MEMBERSHIP_JOIN_RELEASED}:{self.organization_id}:membership:{self.membership_id}"
        else:
            released = self.released_at.isoformat() if self.released_at else ""
            name = f"{MEMBERSHIP_JOIN_RELEASED}:{self.organization_id}:user:{self.user_id}:{released}"
        return uuid.uuid5(_RELEASE_KEYS, name)


def parse_join_release(detail: object) -> JoinRelease | None:
    """The release, or None when the detail is not one (no valid organizationId / userId). An invalid
    optional field is ignored rather than dropping the release."""
    if not isinstance(detail, dict):
        return None
    organization_id = _uuid_or_none(detail.get("organizationId"))
    user_id = _uuid_or_none(detail.get("userId"))
    if organization_id is None or user_id is None:
        return None
    return JoinRelease(
        organization_id=organization_id,
        user_id=user_id,
        membership_id=_uuid_or_none(detail.get("membershipId")),
        released_at=_time_or_none(detail.get("releasedAt")),
    )


def _uuid_or_none(value: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value)) if value is not None else None
    except ValueError:
        return None


def _time_or_none(value: object) -> datetime | None:
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
