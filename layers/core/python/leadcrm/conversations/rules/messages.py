"""Conversation rules without I/O: subjects, the member opt-out, thread keys and the inbox cursor."""

from __future__ import annotations

import base64
import binascii
import struct
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from leadcrm.platform.errors import BadRequest


class MessageChannel(StrEnum):
    EMAIL = "email"
    SMS = "sms"
    WHATSAPP = "whatsapp"


# The name the conversations code uses; the class's own name is the one the API document shows (a ticket's
# channel is another vocabulary, leadcrm.tickets.rules.routing.TicketChannel).
Channel = MessageChannel


class ConversationStatus(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class Direction(StrEnum):
    INBOUND = "inbound"
    OUTBOUND = "outbound"
    NOTE = "note"


class MessageStatus(StrEnum):
    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"
    UNKNOWN = "unknown"  # the send died after it may have reached SES: never re-sent (conversations.queued_sweep)
    RECEIVED = "received"
    NOTE = "note"


# -- thread keys (the spec's externalContactId) ---------------------------------------------------------


def lead_contact_key(lead_id: uuid.UUID) -> str:
    return f"lead:{lead_id}"


def member_contact_key(membership_id: uuid.UUID) -> str:
    return f"member:{membership_id}"


# -- subjects -------------------------------------------------------------------------------------------

# The subject of a first message sent without one, in the contact's language (G9 step 4).
DEFAULT_SUBJECTS = {
    "en": "A message from {organization}",
    "he": "הודעה מאת {organization}",
}
DEFAULT_LANGUAGE = "en"
REPLY_PREFIX = "Re: "
MAX_SUBJECT_LENGTH = 200


def language_of(*locales: str | None) -> str:
    """The first locale we have a default subject for ("he-IL" → "he"), else English."""
    for locale in locales:
        if locale:
            language = locale.replace("_", "-").split("-")[0].strip().lower()
            if language in DEFAULT_SUBJECTS:
                return language
    return DEFAULT_LANGUAGE


def default_subject(organization_name: str, *locales: str | None) -> str:
    return DEFAULT_SUBJECTS[language_of(*locales)].format(organization=organization_name)


def is_reply_subject(subject: str) -> bool:
    return subject[:3].lower() == "re:"


def reply_subject(stored: str) -> str:
    """The stored subject reused for a later message: "Re: …", never "Re: Re: …"."""
    return stored if is_reply_subject(stored) else f"{REPLY_PREFIX}{stored}"


@dataclass(frozen=True)
class SubjectPlan:
    subject: str  # what this message is sent with
    store: str | None  # what the thread stores (only when it had none)


def plan_subject(
    stored: str | None, requested: str | None, organization_name: str, *locales: str | None
) -> SubjectPlan:
    """Subject stored once: the first outbound message stores its subject (or the localized default for a
    blank one); every later message reuses the stored one with "Re:" whatever it asks for."""
    if stored:
        return SubjectPlan(subject=reply_subject(stored), store=None)
    chosen = (requested or "").strip() or default_subject(organization_name, *locales)
    return SubjectPlan(subject=chosen, store=chosen)


# -- the member gate ------------------------------------------------------------------------------------


def member_email_opted_out(prefs: Any) -> bool:
    """Only an explicit `newMessage.email: false` opts out; a missing row, key or any other value is enabled."""
    if not isinstance(prefs, dict):
        return False
    new_message = prefs.get("newMessage")
    return isinstance(new_message, dict) and new_message.get("email") is False


# -- the inbox cursor -----------------------------------------------------------------------------------

_CURSOR = struct.Struct(">Bq16s")
_CURSOR_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_CURSOR_LENGTH = 64


@dataclass(frozen=True)
class KeysetCursor:
    """Where the previous page ended: its last row's timestamp and id (newest first)."""

    at: datetime
    id: uuid.UUID

    def encode(self) -> str:
        micros = (self.at - _EPOCH) // timedelta(microseconds=1)
        return base64.urlsafe_b64encode(_CURSOR.pack(_CURSOR_VERSION, micros, self.id.bytes)).rstrip(b"=").decode()


def decode_keyset_cursor(cursor: str) -> KeysetCursor:
    """400 INVALID_CURSOR for anything this API did not issue."""
    invalid = BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
    if not cursor or len(cursor) > MAX_CURSOR_LENGTH or not cursor.isascii():
        raise invalid
    try:
        version, micros, id_bytes = _CURSOR.unpack(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        at = _EPOCH + timedelta(microseconds=micros)
    except (binascii.Error, ValueError, struct.error, OverflowError) as error:
        raise invalid from error
    if version != _CURSOR_VERSION:
        raise invalid
    return KeysetCursor(at=at, id=uuid.UUID(bytes=id_bytes))
