"""WhatsApp conversation rules without I/O: the 24-hour customer-service window, the order of status
webhooks, and templates (their body parameters and the text they render to).

- The window: a business may send free-form messages to a person only within 24 hours of that person's last
  message to it; afterwards only an approved template. Open while `now < last inbound + 24 h`: at exactly
  24 hours it is closed. A person who never wrote has no window at all.
- Statuses: WhatsApp sends `sent`, `delivered`, `read` and `failed` webhooks, in any order and more than
  once. A message's status is the highest seen, `sent < delivered < read < failed` (a failure is final news:
  WhatsApp reports it when it gave up), so any order of the same webhooks ends in the same status.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

CUSTOMER_SERVICE_WINDOW = timedelta(hours=24)
APPROVED = "APPROVED"
MAX_TEXT_LENGTH = 4096  # WhatsApp's limit on a text message's body
PLACEHOLDER = re.compile(r"\{\{\s*(\d+)\s*\}\}")


class WhatsAppStatus(StrEnum):
    SENT = "sent"
    DELIVERED = "delivered"
    READ = "read"
    FAILED = "failed"


STATUS_RANK = {
    WhatsAppStatus.SENT: 1,
    WhatsAppStatus.DELIVERED: 2,
    WhatsAppStatus.READ: 3,
    WhatsAppStatus.FAILED: 4,
}


def status_rank(status: str | None) -> int:
    """0 for no status (or one we do not know): anything WhatsApp reports moves it."""
    try:
        return STATUS_RANK[WhatsAppStatus(status)] if status else 0
    except ValueError:
        return 0


def latest_status(statuses: Iterable[str | None]) -> WhatsAppStatus | None:
    """The status a message ends in, whatever order its webhooks came in."""
    best = max(statuses, key=status_rank, default=None)
    return WhatsAppStatus(best) if best and status_rank(best) else None


# -- the customer-service window ---------------------------------------------------------------------------


def window_closes_at(last_inbound_at: datetime | None) -> datetime | None:
    """When free-form messages stop being allowed; None when the person never wrote."""
    return last_inbound_at + CUSTOMER_SERVICE_WINDOW if last_inbound_at is not None else None


def window_is_open(last_inbound_at: datetime | None, now: datetime) -> bool:
    closes_at = window_closes_at(last_inbound_at)
    return closes_at is not None and now < closes_at


@dataclass(frozen=True)
class WindowClosed(Exception):
    """A free-form message outside the window; `closed_at` None when the person never wrote."""

    closed_at: datetime | None


def check_free_form(last_inbound_at: datetime | None, now: datetime) -> None:
    """Raise WindowClosed unless a free-form message may be sent now."""
    if not window_is_open(last_inbound_at, now):
        raise WindowClosed(window_closes_at(last_inbound_at))


# -- templates -----------------------------------------------------------------------------------------------


def body_text(components: Any) -> str:
    """The text of a template's BODY component ("" when it has none)."""
    for component in components if isinstance(components, list) else []:
        if isinstance(component, dict) and str(component.get("type", "")).upper() == "BODY":
            text = component.get("text")
            return text if isinstance(text, str) else ""
    return ""


def parameter_count(components: Any) -> int:
    """How many body parameters the template takes: its highest `{{n}}`."""
    numbers = [int(n) for n in PLACEHOLDER.findall(body_text(components))]
    return max(numbers, default=0)


def render(components: Any, parameters: Sequence[str]) -> str:
    """The body the person will read: `{{n}}` replaced by the n-th parameter (kept when there is none)."""

    def fill(match: re.Match[str]) -> str:
        index = int(match.group(1)) - 1
        return parameters[index] if 0 <= index < len(parameters) else match.group(0)

    return PLACEHOLDER.sub(fill, body_text(components))


# -- inbound ---------------------------------------------------------------------------------------------------


def inbound_body(text: str | None, message_type: str | None) -> str:
    """What the thread shows of an inbound message: its text, else its kind (`[image]`, `[audio]`, …)."""
    if text:
        return text
    return f"[{message_type or 'message'}]"
