"""Ticket routing rules: pure matching of a new ticket against an organization's ordered rules.

A rule matches when every condition it sets holds (a condition left empty matches anything):
channel in `channels`, priority in `priorities`, requester type in `requester_types`, and at least one of
`keywords` appearing in the subject or the description (case-insensitive, whole words or phrases). The
first matching rule by position wins and names a queue, an agent or both; no match leaves the ticket in
the unassigned triage queue (§6 New → Unassigned).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum


class TicketChannel(StrEnum):
    EMAIL = "email"
    PORTAL = "portal"
    PHONE = "phone"
    CHAT = "chat"
    API = "api"


# The name the tickets code uses; the class's own name is the one the API document shows (a conversation's
# channel is another vocabulary, leadcrm.conversations.rules.messages.MessageChannel).
Channel = TicketChannel


class Priority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class RequesterType(StrEnum):
    MEMBER = "member"
    LEAD = "lead"
    UNKNOWN = "unknown"  # an email from an address no lead or member of the organization has


@dataclass(frozen=True)
class TicketFacts:
    channel: Channel
    priority: Priority
    requester_type: RequesterType
    subject: str
    description: str


@dataclass(frozen=True)
class RoutingRule:
    id: uuid.UUID
    position: int
    channels: frozenset[str] = frozenset()
    priorities: frozenset[str] = frozenset()
    requester_types: frozenset[str] = frozenset()
    keywords: tuple[str, ...] = ()
    queue_id: uuid.UUID | None = None
    assignee_user_id: uuid.UUID | None = None
    active: bool = True


def normalize_keywords(keywords: Iterable[str]) -> tuple[str, ...]:
    """Lower-cased, inner whitespace collapsed, blanks and repeats dropped, order kept."""
    seen: dict[str, None] = {}
    for keyword in keywords:
        cleaned = " ".join(keyword.lower().split())
        if cleaned:
            seen.setdefault(cleaned, None)
    return tuple(seen)


def _mentions(text: str, keyword: str) -> bool:
    # Word boundaries so "bill" does not match "billiards"; a phrase matches with any whitespace between words.
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(word) for word in keyword.split()) + r"(?!\w)"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def rule_matches(rule: RoutingRule, facts: TicketFacts) -> bool:
    if not rule.active:
        return False
    if rule.channels and facts.channel.value not in rule.channels:
        return False
    if rule.priorities and facts.priority.value not in rule.priorities:
        return False
    if rule.requester_types and facts.requester_type.value not in rule.requester_types:
        return False
    if rule.keywords:
        text = f"{facts.subject}\n{facts.description}"
        if not any(_mentions(text, keyword) for keyword in rule.keywords):
            return False
    return True


def first_match(rules: Sequence[RoutingRule], facts: TicketFacts) -> RoutingRule | None:
    """The first matching rule in position order (ties by id, so the answer never depends on read order)."""
    for rule in sorted(rules, key=lambda r: (r.position, r.id)):
        if rule_matches(rule, facts):
            return rule
    return None
