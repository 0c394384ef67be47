"""Deal rules, without I/O: the state machine of spec section 5, the sealing of closed-won, rotting.

A deal sits on a stage of its organization's deal pipeline. Each stage has a *kind*, the state of the
spec's table (new, discovery, proposal, negotiation, won, lost); an organization may have several stages of
one open kind (say "Negotiation" and "Late negotiation"), and moving between stages of the same kind is a
move within that state. The deal's `status` says where it is in its life: open, stalled (on hold on its
stage), won or lost.

Transitions (spec section 5), each with its validation rule:

| from | to | rule |
|---|---|---|
| new | discovery | a discovery activity scheduled or completed (`activityAt`) |
| discovery | proposal | a proposal document or a quote reference |
| proposal | negotiation | the negotiation activity logged (`activityNote`) |
| negotiation | won | a closure reason; value, currency and close date are sealed |
| negotiation | lost | a loss reason code (one of LossReason) |
| proposal / negotiation (open) | stalled | only the rotting sweep, once idle beyond the stage's threshold |
| stalled | its previous open stage | a reason for the reactivation |
| lost | the first discovery stage | a reason; the reactivation is audited |
| won | anything | never: sealed (409); a correction is a compensating record |

Nothing else moves: no skipping (new straight to proposal), no going back, no loss before negotiation.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from leadcrm.deals.rules.currencies import ISO_4217_CODES


class StageKind(StrEnum):
    NEW = "new"
    DISCOVERY = "discovery"
    PROPOSAL = "proposal"
    NEGOTIATION = "negotiation"
    WON = "won"
    LOST = "lost"


class DealStatus(StrEnum):
    OPEN = "open"
    STALLED = "stalled"
    WON = "won"
    LOST = "lost"


class ForecastCategory(StrEnum):
    PIPELINE = "pipeline"
    BEST_CASE = "best_case"
    COMMIT = "commit"
    CLOSED = "closed"


class LossReason(StrEnum):
    """Loss reason codes (spec: "Loss reason code is mandatory"): a fixed list, so losses can be counted."""

    PRICE = "price"
    COMPETITOR = "competitor"
    NO_BUDGET = "no_budget"
    NO_DECISION = "no_decision"
    TIMING = "timing"
    NOT_A_FIT = "not_a_fit"
    UNRESPONSIVE = "unresponsive"
    OTHER = "other"


class OfferType(StrEnum):
    """What the deal sells."""

    PLAN = "plan"
    PACKAGE = "package"
    COURSE = "course"


OPEN_KINDS = (StageKind.NEW, StageKind.DISCOVERY, StageKind.PROPOSAL, StageKind.NEGOTIATION)
CLOSED_KINDS = (StageKind.WON, StageKind.LOST)
# Where a kind sits in the pipeline's order: stages never go back in phase (won and lost share the last).
PHASE: dict[StageKind, int] = {
    StageKind.NEW: 0,
    StageKind.DISCOVERY: 1,
    StageKind.PROPOSAL: 2,
    StageKind.NEGOTIATION: 3,
    StageKind.WON: 4,
    StageKind.LOST: 4,
}
# The one forward step each open kind may take (besides moves within its own kind).
NEXT_KIND: dict[StageKind, tuple[StageKind, ...]] = {
    StageKind.NEW: (StageKind.DISCOVERY,),
    StageKind.DISCOVERY: (StageKind.PROPOSAL,),
    StageKind.PROPOSAL: (StageKind.NEGOTIATION,),
    StageKind.NEGOTIATION: (StageKind.WON, StageKind.LOST),
}
# Kinds a deal may rot (stall) on (spec: "Proposal or Negotiation: deal stalled beyond rotting threshold").
ROTTING_KINDS = frozenset({StageKind.PROPOSAL, StageKind.NEGOTIATION})
OPEN_STATUSES = (DealStatus.OPEN, DealStatus.STALLED)

MAX_REASON_LENGTH = 1000
MAX_REFERENCE_LENGTH = 500


class Refusal(StrEnum):
    """Why a change is refused; the service maps each to an HTTP status and error code."""

    SEALED = "DEAL_SEALED"  # 409: closed-won never changes again
    CLOSED = "DEAL_CLOSED"  # 409: closed-lost changes only through reactivation
    STALLED = "DEAL_STALLED"  # 409: a stalled deal is reactivated before it moves
    NOT_ALLOWED = "DEAL_TRANSITION_NOT_ALLOWED"  # 409: the table has no such transition
    NOT_STALLED_OR_LOST = "DEAL_NOT_REACTIVATABLE"  # 409: only stalled and lost deals are reactivated
    ACTIVITY_REQUIRED = "DISCOVERY_ACTIVITY_REQUIRED"  # 400
    PROPOSAL_REFERENCE_REQUIRED = "PROPOSAL_REFERENCE_REQUIRED"  # 400
    NEGOTIATION_ACTIVITY_REQUIRED = "NEGOTIATION_ACTIVITY_REQUIRED"  # 400
    CLOSE_REASON_REQUIRED = "CLOSE_REASON_REQUIRED"  # 400
    LOSS_REASON_REQUIRED = "LOSS_REASON_REQUIRED"  # 400
    REACTIVATION_REASON_REQUIRED = "REACTIVATION_REASON_REQUIRED"  # 400
    SAME_STAGE = "DEAL_ALREADY_ON_STAGE"  # 409


# Refusals that are a state conflict (409); the others are missing evidence in the request (400).
CONFLICT_REFUSALS = frozenset(
    {
        Refusal.SEALED,
        Refusal.CLOSED,
        Refusal.STALLED,
        Refusal.NOT_ALLOWED,
        Refusal.NOT_STALLED_OR_LOST,
        Refusal.SAME_STAGE,
    }
)


class DealRefused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal


@dataclass(frozen=True)
class StagePoint:
    """The part of a stage the rules read."""

    id: uuid.UUID
    kind: StageKind


@dataclass(frozen=True)
class Evidence:
    """What the caller brings for a transition (each rule reads its own part)."""

    activity_at: datetime | None = None
    activity_note: str | None = None
    document_ref: str | None = None
    quote_ref: str | None = None
    close_reason: str | None = None
    loss_reason: LossReason | None = None
    loss_note: str | None = None


@dataclass(frozen=True)
class Transition:
    """A planned stage change: where from and to, and the status the deal gets."""

    from_stage: StagePoint
    to_stage: StagePoint
    from_status: DealStatus
    to_status: DealStatus

    @property
    def seals(self) -> bool:
        return self.to_status is DealStatus.WON


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


def require_changeable(status: DealStatus) -> None:
    """Edits (value, currency, dates, owner, probability) are refused on closed deals: closed-won is sealed
    for ever, closed-lost must be reactivated first."""
    if status is DealStatus.WON:
        raise DealRefused(Refusal.SEALED)
    if status is DealStatus.LOST:
        raise DealRefused(Refusal.CLOSED)


def plan_move(status: DealStatus, current: StagePoint, target: StagePoint, evidence: Evidence) -> Transition:
    """The staff move of a deal onto `target`, or DealRefused naming the broken rule.

    Only an open deal moves (stalled ones are reactivated first). Within a kind any stage may follow any
    other; across kinds only the table's forward step, with its evidence.
    """
    require_changeable(status)
    if status is DealStatus.STALLED:
        raise DealRefused(Refusal.STALLED)
    if target.id == current.id:
        raise DealRefused(Refusal.SAME_STAGE)
    if target.kind is not current.kind and target.kind not in NEXT_KIND.get(current.kind, ()):
        raise DealRefused(Refusal.NOT_ALLOWED)
    if target.kind is not current.kind:
        _require_evidence(target.kind, evidence)
    to_status = {StageKind.WON: DealStatus.WON, StageKind.LOST: DealStatus.LOST}.get(target.kind, DealStatus.OPEN)
    return Transition(from_stage=current, to_stage=target, from_status=status, to_status=to_status)


def _require_evidence(kind: StageKind, evidence: Evidence) -> None:
    if kind is StageKind.DISCOVERY and evidence.activity_at is None:
        raise DealRefused(Refusal.ACTIVITY_REQUIRED)
    if kind is StageKind.PROPOSAL and _blank(evidence.document_ref) and _blank(evidence.quote_ref):
        raise DealRefused(Refusal.PROPOSAL_REFERENCE_REQUIRED)
    if kind is StageKind.NEGOTIATION and _blank(evidence.activity_note):
        raise DealRefused(Refusal.NEGOTIATION_ACTIVITY_REQUIRED)
    if kind is StageKind.WON and _blank(evidence.close_reason):
        raise DealRefused(Refusal.CLOSE_REASON_REQUIRED)
    if kind is StageKind.LOST and evidence.loss_reason is None:
        raise DealRefused(Refusal.LOSS_REASON_REQUIRED)


def plan_reactivation(
    status: DealStatus, current: StagePoint, first_discovery: StagePoint | None, reason: str | None
) -> Transition:
    """Stalled → the open stage it stalled on (which it kept); lost → the pipeline's first discovery stage.

    A reason is required either way (spec: "Reason for reactivation recorded", "reactivation audited").
    Closed-won is never reopened.
    """
    if status is DealStatus.WON:
        raise DealRefused(Refusal.SEALED)
    if status is DealStatus.OPEN:
        raise DealRefused(Refusal.NOT_STALLED_OR_LOST)
    if _blank(reason):
        raise DealRefused(Refusal.REACTIVATION_REASON_REQUIRED)
    if status is DealStatus.STALLED:
        return Transition(from_stage=current, to_stage=current, from_status=status, to_status=DealStatus.OPEN)
    if first_discovery is None:  # a pipeline always keeps a discovery stage (deals.rules.pipelines)
        raise DealRefused(Refusal.NOT_ALLOWED)
    return Transition(from_stage=current, to_stage=first_discovery, from_status=status, to_status=DealStatus.OPEN)


def rotting_deadline(last_activity_at: datetime, rotting_days: int) -> datetime:
    return last_activity_at + timedelta(days=rotting_days)


def is_rotting(
    status: DealStatus, kind: StageKind, last_activity_at: datetime, rotting_days: int | None, now: datetime
) -> bool:
    """An open deal on a proposal or negotiation stage with a threshold, idle for longer than it.

    The sweep's SQL states the same condition (deals.rotting); this is the rule it implements."""
    return (
        status is DealStatus.OPEN
        and kind in ROTTING_KINDS
        and rotting_days is not None
        and now > rotting_deadline(last_activity_at, rotting_days)
    )


def effective_probability(stage_probability: int, override: int | None) -> int:
    """A deal's win probability: its own when set, else its stage's default."""
    return stage_probability if override is None else override


def effective_category(stage_category: ForecastCategory, override: ForecastCategory | None) -> ForecastCategory:
    """A deal's forecast category: its own (an open category, on an open stage) when set, else its stage's.
    Spec: "Best Case: Proposal, some Negotiation; Commit: Late Negotiation" (a per-deal call)."""
    return stage_category if override is None else override


def weighted_pipeline(deals: Iterable[tuple[int, int]]) -> int:
    """Σ value × probability over (value_minor, probability %) pairs, in minor units, rounded once at the end
    half away from zero (PostgreSQL's round(numeric), which the forecast's SQL uses)."""
    total = sum(value * probability for value, probability in deals)
    quotient, remainder = divmod(abs(total), 100)
    rounded = quotient + (1 if remainder >= 50 else 0)
    return rounded if total >= 0 else -rounded


def valid_currency(code: str) -> bool:
    """An active ISO 4217 code, upper case (amounts of different currencies are never added)."""
    return code in ISO_4217_CODES
