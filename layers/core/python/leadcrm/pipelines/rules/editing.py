"""Pipeline rules, without I/O: win coverage, where a new stage goes, what a reorder must name.

Win coverage is either-flavor (spec, "Pipeline win coverage"): among its ACTIVE stages a pipeline keeps a
`new` stage (where leads arrive and return), a `lost` stage (where they close), and at least one win stage,
`converted` OR `customer`. A course funnel may drop Converted once it has Customer, and the last win stage
may flip between the two flavours.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from leadcrm.pipelines.rules.statuses import WON_CATEGORIES, StageCategory
from leadcrm.platform.errors import BadRequest

# An organization's pipelines are listed whole (no pages) and a pipeline's stages are a board's columns:
# both stay small, and these limits keep a request's cost bounded whatever a client sends.
MAX_STAGES_PER_PIPELINE = 100
MAX_ACTIVE_PIPELINES_PER_ORGANIZATION = 100
MAX_NAME_LENGTH = 100


class CoverageNeed(StrEnum):
    """What a pipeline must always be able to hold; `win` is met by either win flavour."""

    NEW = "new"
    WIN = "win"
    LOST = "lost"


# In the order the error names them.
_COVERAGE: tuple[tuple[CoverageNeed, frozenset[StageCategory]], ...] = (
    (CoverageNeed.NEW, frozenset({StageCategory.NEW})),
    (CoverageNeed.WIN, WON_CATEGORIES),
    (CoverageNeed.LOST, frozenset({StageCategory.LOST})),
)


def missing_coverage(active_categories: Iterable[StageCategory]) -> tuple[CoverageNeed, ...]:
    """The needs no active stage meets, in the order new, win, lost; empty when the pipeline is covered."""
    present = {StageCategory(c) for c in active_categories}
    return tuple(need for need, categories in _COVERAGE if not present & categories)


def require_win_coverage(active_categories: Iterable[StageCategory]) -> None:
    """400 PIPELINE_WIN_COVERAGE naming what would be missing, when the active stages do not cover."""
    missing = missing_coverage(active_categories)
    if missing:
        raise BadRequest(
            "A pipeline must keep an active New stage, an active Lost stage and at least one active win stage "
            "(Converted or Customer).",
            code="PIPELINE_WIN_COVERAGE",
            missing=[need.value for need in missing],
        )


@dataclass(frozen=True)
class StageSlot:
    """The part of a stage the rules look at."""

    id: uuid.UUID
    category: StageCategory
    archived: bool


def active_categories_after_archive(stages: Iterable[StageSlot], stage_id: uuid.UUID) -> list[StageCategory]:
    """The active stages' categories once `stage_id` is archived."""
    return [s.category for s in stages if not s.archived and s.id != stage_id]


def active_categories_after_recategorize(
    stages: Iterable[StageSlot], stage_id: uuid.UUID, category: StageCategory
) -> list[StageCategory]:
    """The active stages' categories once `stage_id` has `category` (an archived stage counts for nothing)."""
    return [category if s.id == stage_id else s.category for s in stages if not s.archived]


def order_with_inserted(active_ids: Sequence[uuid.UUID], new_id: uuid.UUID, position: int | None) -> list[uuid.UUID]:
    """The active stages in order once `new_id` is inserted at `position` (an index among the active stages,
    0 = first); None puts it last. A position past the end is refused, not clamped: the caller meant a place."""
    if position is None:
        return [*active_ids, new_id]
    if position < 0 or position > len(active_ids):
        raise BadRequest(
            f"position must be between 0 and {len(active_ids)}.",
            code="STAGE_POSITION_OUT_OF_RANGE",
            maxPosition=len(active_ids),
        )
    return [*active_ids[:position], new_id, *active_ids[position:]]


def require_exact_reorder(active_ids: Sequence[uuid.UUID], requested_ids: Sequence[uuid.UUID]) -> None:
    """A reorder names every active stage of the pipeline exactly once, and nothing else (400 otherwise).

    A partial list would leave the unnamed stages' places undefined; an archived or foreign id is a mistake
    the client should hear about rather than have silently dropped.
    """
    active = set(active_ids)
    duplicates = sorted({i for i, n in Counter(requested_ids).items() if n > 1}, key=str)
    unknown = sorted({i for i in requested_ids if i not in active}, key=str)
    missing = sorted(active - set(requested_ids), key=str)
    if duplicates or unknown or missing:
        raise BadRequest(
            "stageIds must list every active stage of the pipeline exactly once.",
            code="STAGE_ORDER_MISMATCH",
            duplicateStageIds=[str(i) for i in duplicates],
            unknownStageIds=[str(i) for i in unknown],
            missingStageIds=[str(i) for i in missing],
        )


def renumbered(active_in_order: Sequence[uuid.UUID], archived_in_order: Sequence[uuid.UUID]) -> dict[uuid.UUID, int]:
    """Positions after a structural change: active stages 0..n-1 in board order, archived ones after them in
    the order they had. Active positions stay contiguous, so a stage's position is its column index."""
    return {stage_id: index for index, stage_id in enumerate([*active_in_order, *archived_in_order])}
