"""Conversions API for CRM (Meta's "Conversion Leads" integration): the CRM event a lead's stage change becomes.

Pure: what is sent, and whether anything is. Meta's payload specification for CRM events:

    {"event_name": "<stage>", "event_time": <unix seconds>, "action_source": "system_generated",
     "event_id": "<stable id>", "user_data": {"lead_id": <leadgen id>, "em": [sha256], "ph": [sha256]},
     "custom_data": {"event_source": "crm", "lead_event_source": "LeadCRM"}}

`lead_id` is the Lead Ads leadgen id (15–17 digits; sent as a number when it is one). Email and phone go only
where the organization allows it, normalized as Meta asks before SHA-256: an email trimmed and lower-cased, a
phone in E.164 digits without "+" (country code included, no leading zeros). The event id is derived from the
domain event's id, so a redelivered status change is the same CRM event (Meta de-duplicates on it, and so does
our log).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

ACTION_SOURCE = "system_generated"
EVENT_SOURCE = "crm"
LEAD_EVENT_SOURCE = "LeadCRM"
EVENT_NAME_MAX = 100  # what an organization may call a stage at Meta
DATASET_ID = re.compile(r"^[0-9]{1,32}$")
CRM_EVENT_KIND = "meta.crm_event"  # the sender's queue message
CRM_RESULT_KIND = "meta.crm_event_result"  # the sender's answer, on the ingestion queue
SENT_ACTIVITY = "meta_crm_event_sent"  # the lead's timeline: what was sent and Meta's answer


class Refusal(StrEnum):
    """Why a stage change sends nothing (recorded as a withdrawn event when one was built)."""

    NOT_FROM_META = "not_from_meta"  # no leadgen id: the lead did not come from Lead Ads
    NOT_CONFIGURED = "not_configured"  # the page's connection has no CRM events settings, or they are off
    ERASED = "erased"  # the lead is gone
    PSEUDONYMIZED = "pseudonymized"
    DO_NOT_CONTACT = "do_not_contact"  # every channel revoked (a dnc call outcome or all revoked)
    DISCONNECTED = "disconnected"  # the page was disconnected before the event was handed to the sender


@dataclass(frozen=True)
class LeadFacts:
    """What the decision needs to know about a lead at build or send time."""

    exists: bool
    pseudonymized: bool
    revoked_channels: int
    leadgen_id: str | None


def refusal(facts: LeadFacts, *, channels: int, configured: bool) -> Refusal | None:
    """None when the event may go; else why not. Erasure and pseudonymization first: nothing of such a lead
    leaves, whatever the settings."""
    if not facts.exists:
        return Refusal.ERASED
    if facts.pseudonymized:
        return Refusal.PSEUDONYMIZED
    if not facts.leadgen_id:
        return Refusal.NOT_FROM_META
    if facts.revoked_channels >= channels:
        return Refusal.DO_NOT_CONTACT
    if not configured:
        return Refusal.NOT_CONFIGURED
    return None


def event_name_for(stage_id: str, stage_name: str, mapping: Mapping[str, str]) -> str:
    """The organization's name for the stage at Meta, else the stage's own name."""
    named = mapping.get(stage_id)
    return named if named else stage_name


def crm_event_id(source_event_id: str) -> str:
    """Stable per domain event: a redelivery of the same status change is the same CRM event."""
    return f"leadcrm-{source_event_id}"


def normalized_email(email: str | None) -> str | None:
    cleaned = (email or "").strip().lower()
    return cleaned if "@" in cleaned else None


def normalized_phone(e164: str | None) -> str | None:
    """An E.164 number ("+972501234567") as Meta hashes it: digits only, country code first, no leading zero."""
    digits = re.sub(r"[^0-9]", "", e164 or "").lstrip("0")
    return digits or None


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _lead_id_value(leadgen_id: str) -> int | str:
    return int(leadgen_id) if leadgen_id.isdigit() else leadgen_id


def build_crm_event(
    *,
    event_name: str,
    occurred_at: datetime,
    source_event_id: str,
    leadgen_id: str,
    email: str | None = None,
    phone_e164: str | None = None,
) -> dict[str, Any]:
    """The CRM event as Meta's payload specification has it. `email` / `phone_e164` are passed only when the
    organization allows hashed contact details to go."""
    user_data: dict[str, Any] = {"lead_id": _lead_id_value(leadgen_id)}
    if (em := normalized_email(email)) is not None:
        user_data["em"] = [sha256_hex(em)]
    if (ph := normalized_phone(phone_e164)) is not None:
        user_data["ph"] = [sha256_hex(ph)]
    return {
        "event_name": event_name[:EVENT_NAME_MAX],
        "event_time": int(occurred_at.timestamp()),
        "action_source": ACTION_SOURCE,
        "event_id": crm_event_id(source_event_id),
        "user_data": user_data,
        "custom_data": {"event_source": EVENT_SOURCE, "lead_event_source": LEAD_EVENT_SOURCE},
    }


def sent_summary(event: Mapping[str, Any]) -> dict[str, Any]:
    """What the lead's timeline says was sent: the event without the hashes themselves (which fields went)."""
    return {
        "eventName": event.get("event_name"),
        "eventTime": event.get("event_time"),
        "eventId": event.get("event_id"),
        "userData": sorted((event.get("user_data") or {}).keys()),
    }


def meta_answer(status: int | None, body: Mapping[str, Any] | None) -> dict[str, Any]:
    """Meta's answer as kept and shown: events_received and fbtrace_id, or the error's code and message."""
    body = body or {}
    error = body.get("error") if isinstance(body.get("error"), Mapping) else None
    if error is not None:
        return {
            "status": status,
            "error": {
                "code": error.get("code"),
                "subcode": error.get("error_subcode"),
                "type": error.get("type"),
                "message": str(error.get("message") or "")[:500],
            },
            "fbtraceId": error.get("fbtrace_id") or body.get("fbtrace_id"),
        }
    return {"status": status, "eventsReceived": body.get("events_received"), "fbtraceId": body.get("fbtrace_id")}
