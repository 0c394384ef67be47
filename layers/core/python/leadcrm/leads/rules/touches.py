"""Attribution rules (crm-workflows section 7, exception "Campaign source unknown"): pure, no I/O.

- First touch: the touch a lead was created with is its acquisition; it is kept, with the UTM parameters
  the entry point received, and never overwritten by a later touch. Only an audited staff correction
  changes its channel or campaign (analytics.attribution.correct_attribution).
- Multi-touch: every later engagement (a resubmitted form, an ad, a WhatsApp referral, an email reply, an
  inbound message) is appended to the lead's touch log.
- A lead whose first touch names no campaign, no UTM source and no channel that says where the person came
  from is attributed to "Direct / Unknown".
- Credit per campaign over the customers of a period: first touch (all of it to the first touch's campaign),
  last touch (all of it to the last touch at or before the win) and linear (an equal share to every touch
  up to the win). Touches without a campaign credit the no-campaign bucket (campaign None); the report
  also counts acquisitions per first-touch channel, where Direct / Unknown is a channel.
- A customer is a lead that won (converted or customer, the first time) within the attribution window
  after its first touch. CAC = the campaign's spend in the period / the customers its first touches
  acquired in the period; no customers, no CAC.
- Spend entries cover a range of days; a period that covers part of one gets the same part of its amount.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

DIRECT_UNKNOWN = "direct_unknown"
DIRECT_UNKNOWN_LABEL = "Direct / Unknown"
# Lead sources that say where the person came from by themselves; manual, import, other and a minisite form
# without a campaign or UTM do not (the person could have come from anywhere).
ACQUISITION_SOURCES = frozenset({"facebook", "instagram", "whatsapp", "email", "referral", "walk_in"})
UTM_FIELDS = ("source", "medium", "campaign", "term", "content")
MAX_UTM_LENGTH = 200


class TouchKind(StrEnum):
    FORM = "form"
    AD = "ad"
    WHATSAPP_REFERRAL = "whatsapp_referral"
    EMAIL_REPLY = "email_reply"
    MESSAGE = "message"
    UTM = "utm"
    STAFF = "staff"
    IMPORT = "import"
    OTHER = "other"


# The receipt channel of an entry point (leads.intake.intake_lead `channel`) → the kind of touch it is.
# A new entry point adds its channel here; an unknown one is `other` (or `utm` when it carries UTM).
ENTRY_CHANNEL_KINDS: dict[str, TouchKind] = {
    "minisite": TouchKind.FORM,
    "minisite_event": TouchKind.FORM,
    "staff": TouchKind.STAFF,
    "meta": TouchKind.AD,
    "meta_lead_ads": TouchKind.AD,
    "facebook": TouchKind.AD,
    "instagram": TouchKind.AD,
    "whatsapp": TouchKind.WHATSAPP_REFERRAL,
    "email": TouchKind.MESSAGE,
    "import": TouchKind.IMPORT,
    "csv": TouchKind.IMPORT,
}


@dataclass(frozen=True)
class Utm:
    source: str | None = None
    medium: str | None = None
    campaign: str | None = None
    term: str | None = None
    content: str | None = None

    @property
    def empty(self) -> bool:
        return not any((self.source, self.medium, self.campaign, self.term, self.content))


def _clean(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    cleaned = value.strip()[:MAX_UTM_LENGTH]
    return cleaned or None


def utm_from_received(received: Mapping[str, Any] | None) -> Utm:
    """The UTM parameters in what an entry point received: a `utm` object ({source, medium, …}, as the
    public capture takes it), or flat `utmSource` / `utm_source` fields (as forms forward a query string)."""
    if not received:
        return Utm()
    nested = received.get("utm")
    nested = nested if isinstance(nested, Mapping) else {}
    values = {}
    for name in UTM_FIELDS:
        flat = received.get(f"utm{name.capitalize()}", received.get(f"utm_{name}"))
        values[name] = _clean(nested.get(name, flat))
    return Utm(**values)


def touch_kind(entry_channel: str, utm: Utm) -> TouchKind:
    kind = ENTRY_CHANNEL_KINDS.get(entry_channel)
    if kind is not None:
        return kind
    return TouchKind.OTHER if utm.empty else TouchKind.UTM


def acquisition_channel(source: str, campaign_id: uuid.UUID | None, utm: Utm) -> str:
    """The channel a first touch attributes the lead to: the UTM source when there is one (lower case),
    else the lead's source when it says where the person came from or a campaign names the surface, else
    Direct / Unknown."""
    if utm.source:
        return utm.source.lower()
    if source in ACQUISITION_SOURCES or campaign_id is not None:
        return source
    return DIRECT_UNKNOWN


# -- credit --------------------------------------------------------------------------------------------------










# -- spend and CAC -------------------------------------------------------------------------------------------





