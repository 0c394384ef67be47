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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from fractions import Fraction
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


@dataclass(frozen=True)
class TouchPoint:
    occurred_at: datetime
    campaign_id: uuid.UUID | None


@dataclass(frozen=True)
class Journey:
    """A customer's touches: the first (its acquisition) and the later ones, and when it won."""

    first: TouchPoint
    won_at: datetime
    later: Sequence[TouchPoint] = ()

    def path(self) -> list[TouchPoint]:
        """The touches that led to the win, oldest first: the first touch and the later ones up to the win (a
        touch after the win did not help win it). Ordered by time, the first touch ahead on a tie: a touch
        logged later but dated earlier (a late event) is not the last touch."""
        later = [t for t in self.later if t.occurred_at <= self.won_at]
        return sorted([self.first, *later], key=lambda t: t.occurred_at)


@dataclass
class Credit:
    first_touch: Fraction = field(default_factory=Fraction)
    last_touch: Fraction = field(default_factory=Fraction)
    linear: Fraction = field(default_factory=Fraction)


def credit_by_campaign(journeys: Sequence[Journey]) -> dict[uuid.UUID | None, Credit]:
    """Each customer gives one unit of credit per model: to the first touch's campaign, to the last
    touch's, and split evenly over every touch of its path. Exact fractions: each model sums to the
    number of customers. Key None: no campaign."""
    credits: dict[uuid.UUID | None, Credit] = {}

    def of(campaign_id: uuid.UUID | None) -> Credit:
        return credits.setdefault(campaign_id, Credit())

    for journey in journeys:
        path = journey.path()
        of(journey.first.campaign_id).first_touch += 1
        of(path[-1].campaign_id).last_touch += 1
        share = Fraction(1, len(path))
        for touch in path:
            of(touch.campaign_id).linear += share
    return credits


# -- spend and CAC -------------------------------------------------------------------------------------------

CENT = Decimal("0.01")


def prorated_spend(
    amount: Decimal, period_start: date, period_end: date, range_start: date | None, range_end: date | None
) -> Decimal:
    """The part of a spend entry (days period_start..period_end, both included) that falls in a range of
    days (both included; None: unbounded), in proportion to the days, to the cent."""
    start = max(period_start, range_start) if range_start else period_start
    end = min(period_end, range_end) if range_end else period_end
    if end < start:
        return Decimal("0.00")
    days = (period_end - period_start).days + 1
    return (amount * ((end - start).days + 1) / days).quantize(CENT, rounding=ROUND_HALF_UP)


def customer_acquisition_cost(spend: Decimal, customers: int) -> Decimal | None:
    """Spend per customer acquired, to the cent; None when nobody was acquired (no CAC to speak of)."""
    if customers <= 0:
        return None
    return (spend / customers).quantize(CENT, rounding=ROUND_HALF_UP)
