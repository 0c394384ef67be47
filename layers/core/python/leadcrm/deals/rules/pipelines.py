"""Deal pipeline rules, without I/O: the default stages (spec section 2) and the invariants edits keep.

Invariants of an organization's deal pipeline:
- every open kind (new, discovery, proposal, negotiation) has at least one stage, and there is exactly one
  closed-won and one closed-lost stage (stages are added, never removed: deals point at them);
- the stages are in phase order: new, then discovery, proposal, negotiation, then won and lost (a reorder
  may shuffle stages within a phase, never put a proposal stage before a discovery one);
- won is 100 % and lost 0 %, both in the `closed` forecast category; an open stage has a probability from 0
  to 100 and an open category (pipeline, best case or commit);
- only proposal and negotiation stages rot (spec section 5), after 1 to 365 idle days, or never (null).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from leadcrm.deals.rules.deals import OPEN_KINDS, PHASE, ROTTING_KINDS, ForecastCategory, StageKind
from leadcrm.platform.errors import BadRequest

DEFAULT_DEAL_PIPELINE_NAME = "Deals"
MAX_DEAL_STAGES = 20
MAX_ROTTING_DAYS = 365
MAX_STAGE_NAME_LENGTH = 100
OPEN_FORECAST_CATEGORIES = (ForecastCategory.PIPELINE, ForecastCategory.BEST_CASE, ForecastCategory.COMMIT)


@dataclass(frozen=True)
class StageSettings:
    name: str
    kind: StageKind
    probability: int
    forecast_category: ForecastCategory
    rotting_days: int | None = None


# Spec section 2: typical win probabilities and the forecast rollup (Pipeline: New, Discovery; Best Case:
# Proposal and "some" Negotiation; Commit: "late" Negotiation, which a deal or an added stage opts into).
DEFAULT_DEAL_STAGES: tuple[StageSettings, ...] = (
    StageSettings("New", StageKind.NEW, 10, ForecastCategory.PIPELINE),
    StageSettings("Discovery", StageKind.DISCOVERY, 25, ForecastCategory.PIPELINE),
    StageSettings("Proposal", StageKind.PROPOSAL, 50, ForecastCategory.BEST_CASE, rotting_days=14),
    StageSettings("Negotiation", StageKind.NEGOTIATION, 75, ForecastCategory.BEST_CASE, rotting_days=14),
    StageSettings("Closed-Won", StageKind.WON, 100, ForecastCategory.CLOSED),
    StageSettings("Closed-Lost", StageKind.LOST, 0, ForecastCategory.CLOSED),
)


def _invalid(message: str, code: str, **extra: object) -> BadRequest:
    return BadRequest(message, code=code, **extra)


def require_valid_settings(settings: StageSettings) -> None:
    """400 with a precise code when a stage's probability, category or rotting threshold breaks its kind."""
    if settings.kind is StageKind.WON and settings.probability != 100:
        raise _invalid("The closed-won stage is 100 %.", "DEAL_STAGE_PROBABILITY_FIXED")
    if settings.kind is StageKind.LOST and settings.probability != 0:
        raise _invalid("The closed-lost stage is 0 %.", "DEAL_STAGE_PROBABILITY_FIXED")
    if not 0 <= settings.probability <= 100:
        raise _invalid("probability is a whole percentage from 0 to 100.", "DEAL_STAGE_PROBABILITY_RANGE")
    closed = settings.kind not in OPEN_KINDS
    if closed != (settings.forecast_category is ForecastCategory.CLOSED):
        raise _invalid(
            "Closed-won and closed-lost are in the closed category; open stages are pipeline, best_case or commit.",
            "DEAL_STAGE_CATEGORY_MISMATCH",
        )
    if settings.rotting_days is not None:
        if settings.kind not in ROTTING_KINDS:
            raise _invalid("Only proposal and negotiation stages rot.", "DEAL_STAGE_CANNOT_ROT")
        if not 1 <= settings.rotting_days <= MAX_ROTTING_DAYS:
            raise _invalid(f"rottingDays is from 1 to {MAX_ROTTING_DAYS}.", "DEAL_STAGE_ROTTING_RANGE")


@dataclass(frozen=True)
class StageSlot:
    id: uuid.UUID
    kind: StageKind


def require_valid_order(stages: Sequence[StageSlot]) -> None:
    """400 DEAL_PIPELINE_COVERAGE / DEAL_STAGE_ORDER when the ordered stages break the invariants."""
    if len(stages) > MAX_DEAL_STAGES:
        raise _invalid(f"A deal pipeline has at most {MAX_DEAL_STAGES} stages.", "DEAL_STAGE_LIMIT")
    counts = Counter(s.kind for s in stages)
    missing = [k.value for k in OPEN_KINDS if not counts[k]]
    if missing or counts[StageKind.WON] != 1 or counts[StageKind.LOST] != 1:
        raise _invalid(
            "A deal pipeline keeps a stage of each open kind and exactly one closed-won and one closed-lost stage.",
            "DEAL_PIPELINE_COVERAGE",
            missing=missing,
        )
    phases = [PHASE[s.kind] for s in stages]
    if phases != sorted(phases):
        raise _invalid(
            "Stages stay in phase order: new, discovery, proposal, negotiation, then closed-won and closed-lost.",
            "DEAL_STAGE_ORDER",
        )


def insert_position(stages: Sequence[StageSlot], kind: StageKind, position: int | None) -> int:
    """Where a new stage goes: `position` (0 = first) when given, else right after the last stage of its kind."""
    if position is not None:
        if not 0 <= position <= len(stages):
            raise _invalid(
                f"position must be between 0 and {len(stages)}.", "STAGE_POSITION_OUT_OF_RANGE", maxPosition=len(stages)
            )
        return position
    last_of_phase = [i for i, s in enumerate(stages) if PHASE[s.kind] <= PHASE[kind]]
    return (last_of_phase[-1] + 1) if last_of_phase else 0


def require_exact_reorder(current_ids: Sequence[uuid.UUID], requested_ids: Sequence[uuid.UUID]) -> None:
    """A reorder names every stage exactly once and nothing else."""
    if len(requested_ids) != len(set(requested_ids)) or set(requested_ids) != set(current_ids):
        raise _invalid("stageIds must list every stage of the deal pipeline exactly once.", "STAGE_ORDER_MISMATCH")
