"""Attribution's credit and cost rules, without I/O: first-touch / last-touch / linear credit of a customer's
journey per campaign, spend prorated over a period, and the customer acquisition cost. The touches they read
are classified at intake (leads.rules.touches)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction


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
    number of customers. Key None: no campaign; keys in the order the journeys first name them.

    Counted in integers (first and last touches per campaign, linear shares per campaign and path length)
    and made fractions once per campaign: adding a Fraction per touch cost ~45 ms for 5,000 customers."""
    first: Counter[uuid.UUID | None] = Counter()
    last: Counter[uuid.UUID | None] = Counter()
    shares: dict[uuid.UUID | None, Counter[int]] = {}  # campaign -> path length -> touches
    for journey in journeys:
        path = journey.path()
        length = len(path)
        first[journey.first.campaign_id] += 1
        for touch in path:
            shares.setdefault(touch.campaign_id, Counter())[length] += 1
        last[path[-1].campaign_id] += 1
    return {
        campaign_id: Credit(
            first_touch=Fraction(first[campaign_id]),
            last_touch=Fraction(last[campaign_id]),
            linear=sum((Fraction(count, length) for length, count in shares[campaign_id].items()), Fraction()),
        )
        for campaign_id in shares
    }


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
