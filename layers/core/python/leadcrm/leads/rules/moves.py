"""Rules for moving a lead between stages and pipelines. Pure: the services read rows, ask here, write.

The lead's primary placement (leads.pipeline_id + leads.stage_id) is the one leads.status mirrors; its
secondary placements live in other pipelines and never touch the status. Every path that moves a lead
(PATCH, set-primary, bulk moves) asks the same questions here, so the rules cannot drift apart:

- converted only via convert: a move into a `converted`-category stage is refused unless the lead is
  already converted (then it is a repositioning). The same holds for secondary placements and for a
  primary swap, which must not fabricate a conversion either.
- a lead entering `lost` needs a reason (lead-intake-principles: "Lead is declined — keep a reason and
  history"). The reason is stored on the status event (history) and on the lead while it stays lost;
  when the lead leaves `lost` the lead's `lost_reason` is cleared, because it describes the current
  state only, and the history keeps every reason it ever had.
- a move to the stage the lead is already on is no move at all: nothing is written, nothing recorded.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from leadcrm.pipelines.rules.statuses import StageCategory


class StageLike(Protocol):
    """What the rules need to know about a stage (pipelines.stages.StageRow is one)."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def pipeline_id(self) -> uuid.UUID: ...

    @property
    def category(self) -> StageCategory: ...

    @property
    def archived_at(self) -> datetime | None: ...


class MoveRefusal(StrEnum):
    """Why a move is not made. The values are the codes bulk results report per lead."""

    CONVERT_REQUIRED = "convert_required"
    NOT_IN_PIPELINE = "not_in_pipeline"
    STAGE_ARCHIVED = "stage_archived"
    LOST_REASON_REQUIRED = "lost_reason_required"
    LOST_REASON_NOT_LOST = "lost_reason_not_lost"


class MoveRefused(Exception):
    def __init__(self, refusal: MoveRefusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal


@dataclass(frozen=True)
class LeadPosition:
    """A lead's primary placement and what the rules need about it, as read under its row lock."""

    lead_id: uuid.UUID
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    status: StageCategory
    converted: bool
    lost_reason: str | None = None


@dataclass(frozen=True)
class StageMove:
    """One primary move: what the lead row becomes and what the history records."""

    lead_id: uuid.UUID
    from_stage_id: uuid.UUID
    to_stage_id: uuid.UUID
    from_status: StageCategory
    to_status: StageCategory
    lost_reason: str | None  # the lead's lost_reason after the move
    status_reason: str | None  # the reason this move records in the history (a newly given lost reason)

    @property
    def category_changed(self) -> bool:
        """Only a category change bumps statusChangedAt and emits lead.status_changed."""
        return self.from_status != self.to_status


def is_converted(status: StageCategory | str, converted_membership_id: uuid.UUID | None) -> bool:
    """A lead is converted once convert linked a membership, or while it sits in a converted stage."""
    return converted_membership_id is not None or StageCategory(status) == StageCategory.CONVERTED


def convert_refusal(target_category: StageCategory, lead_converted: bool) -> MoveRefusal | None:
    """converted only via convert: an unconverted lead may never be put into a converted stage by a move."""
    if StageCategory(target_category) == StageCategory.CONVERTED and not lead_converted:
        return MoveRefusal.CONVERT_REQUIRED
    return None


def target_refusal(pipeline_id: uuid.UUID, target: StageLike, lead_converted: bool) -> MoveRefusal | None:
    """Whether a lead whose placement is in `pipeline_id` may be placed on `target` at all."""
    if target.pipeline_id != pipeline_id:
        return MoveRefusal.NOT_IN_PIPELINE
    if target.archived_at is not None:
        return MoveRefusal.STAGE_ARCHIVED
    return convert_refusal(target.category, lead_converted)


def lost_reason_after(
    from_status: StageCategory, to_status: StageCategory, current_reason: str | None, given_reason: str | None
) -> tuple[str | None, str | None]:
    """(the lead's lost_reason after the move, the reason the history records); refuses a missing reason.

    Entering lost needs a reason. Moving between lost stages keeps the reason unless a new one is given.
    Leaving lost clears it (the history keeps it). A reason for a lead that does not end up lost is refused:
    it would be stored against nothing.
    """
    if to_status != StageCategory.LOST:
        if given_reason is not None:
            raise MoveRefused(MoveRefusal.LOST_REASON_NOT_LOST)
        return None, None
    if from_status != StageCategory.LOST:
        if not given_reason:
            raise MoveRefused(MoveRefusal.LOST_REASON_REQUIRED)
        return given_reason, given_reason
    if given_reason is not None and given_reason != current_reason:
        return given_reason, given_reason
    return current_reason, None


def plan_stage_move(lead: LeadPosition, target: StageLike, *, lost_reason: str | None = None) -> StageMove | None:
    """The primary move of `lead` onto `target`, or None when it is already there (an idempotent no-op).

    Raises MoveRefused when a rule forbids it. A lost reason given for the stage the lead is already on is
    not a move either: see `lost_reason_correction`.
    """
    if target.id == lead.stage_id:
        return None
    refusal = target_refusal(lead.pipeline_id, target, lead.converted)
    if refusal:
        raise MoveRefused(refusal)
    return _move(lead, target, lost_reason)


def plan_primary_swap(lead: LeadPosition, new_primary: StageLike, *, lost_reason: str | None = None) -> StageMove:
    """set-primary: the lead's status re-mirrors from the promoted placement's stage.

    The stage is in another pipeline by definition, and it may be archived (the lead already sits there);
    only the conversion and lost-reason rules apply: a swap must not fabricate a conversion.
    """
    refusal = convert_refusal(new_primary.category, lead.converted)
    if refusal:
        raise MoveRefused(refusal)
    return _move(lead, new_primary, lost_reason)


def _move(lead: LeadPosition, target: StageLike, lost_reason: str | None) -> StageMove:
    return _move_to(lead, target.id, StageCategory(target.category), lost_reason)


def _move_to(lead: LeadPosition, target_id: uuid.UUID, to_status: StageCategory, lost_reason: str | None) -> StageMove:
    reason_after, status_reason = lost_reason_after(lead.status, to_status, lead.lost_reason, lost_reason)
    return StageMove(
        lead_id=lead.lead_id,
        from_stage_id=lead.stage_id,
        to_stage_id=target_id,
        from_status=lead.status,
        to_status=to_status,
        lost_reason=reason_after,
        status_reason=status_reason,
    )


def lost_reason_correction(lead: LeadPosition, given_reason: str) -> str | None:
    """A new lost reason for a lead that stays where it is: the corrected reason, or None when unchanged.

    Only a lost lead has a lost reason to correct.
    """
    if lead.status != StageCategory.LOST:
        raise MoveRefused(MoveRefusal.LOST_REASON_NOT_LOST)
    return None if given_reason == lead.lost_reason else given_reason


def requested_status_needs_move(current_status: StageCategory, requested: StageCategory) -> bool:
    """A bare status the lead already has is no move: it must not jump to that category's first stage."""
    return StageCategory(requested) != StageCategory(current_status)


# A category from its stored value by a dict lookup: an Enum call costs a few microseconds, which a bulk move
# of 10,000 leads pays per lead.
CATEGORY_OF: dict[str, StageCategory] = {c.value: c for c in StageCategory}


class BulkTarget(StrEnum):
    """Where a lead of a bulk move stands relative to the target stage's pipeline."""

    PRIMARY = "primary"
    SECONDARY = "secondary"
    NOT_IN_PIPELINE = "not_in_pipeline"
    NOT_FOUND = "not_found"


@dataclass(frozen=True)
class BulkCandidate:
    """One requested lead as read (locked) for a bulk move; `position` None when it is not in the org."""

    lead_id: uuid.UUID
    position: LeadPosition | None
    placement_stage_id: uuid.UUID | None  # its secondary placement's stage in the target pipeline, if any


@dataclass(frozen=True)
class BulkPlan:
    requested: tuple[uuid.UUID, ...]  # the distinct requested ids, in the caller's order
    primary_moves: list[StageMove]
    secondary_moves: list[tuple[uuid.UUID, uuid.UUID]]  # (lead id, from stage id)
    unchanged: list[uuid.UUID]  # already on the target stage: reported as moved, nothing recorded
    skipped: list[tuple[uuid.UUID, str]]

    @property
    def moved(self) -> list[uuid.UUID]:
        """Every lead that now sits on the target stage (the idempotent ones included), in request order."""
        moved = {m.lead_id for m in self.primary_moves} | {lead_id for lead_id, _ in self.secondary_moves}
        moved |= set(self.unchanged)
        return [lead_id for lead_id in self.requested if lead_id in moved]


def distinct_in_order(ids: list[uuid.UUID]) -> tuple[uuid.UUID, ...]:
    return tuple(dict.fromkeys(ids))


def plan_bulk_move(
    requested: list[uuid.UUID], candidates: dict[uuid.UUID, BulkCandidate], target: StageLike, lost_reason: str | None
) -> BulkPlan:
    """Sorts requested leads into primary moves, secondary placement moves, no-ops and skips.

    The target stage's pipeline decides: a lead whose primary pipeline it is moves by the primary rules; a
    lead with a secondary placement there moves that placement; any other lead is skipped and reported.
    Unconverted leads aimed at a converted stage are skipped (never silently converted). A lead entering
    lost without a reason refuses the whole request (MoveRefused): the reason is the caller's to give, once
    for all. A reason aimed at a stage that is not lost is refused too.
    """
    target_category = StageCategory(target.category)
    if lost_reason is not None and target_category != StageCategory.LOST:
        raise MoveRefused(MoveRefusal.LOST_REASON_NOT_LOST)
    order = distinct_in_order(requested)
    unconverted_refusal = convert_refusal(target_category, lead_converted=False)  # the same for every lead
    primary: list[StageMove] = []
    secondary: list[tuple[uuid.UUID, uuid.UUID]] = []
    unchanged: list[uuid.UUID] = []
    skipped: list[tuple[uuid.UUID, str]] = []
    target_id, target_pipeline_id = target.id, target.pipeline_id
    for lead_id in order:
        candidate = candidates.get(lead_id)
        if candidate is None or candidate.position is None:
            skipped.append((lead_id, BulkTarget.NOT_FOUND.value))
            continue
        lead = candidate.position
        if lead.pipeline_id == target_pipeline_id:
            current_stage = lead.stage_id
        elif candidate.placement_stage_id is not None:
            current_stage = candidate.placement_stage_id
        else:
            skipped.append((lead_id, BulkTarget.NOT_IN_PIPELINE.value))
            continue
        if current_stage == target_id:
            unchanged.append(lead_id)
            continue
        refusal = None if lead.converted else unconverted_refusal
        if refusal:
            skipped.append((lead_id, refusal.value))
        elif lead.pipeline_id == target_pipeline_id:
            # A lead already lost keeps its own reason when it moves between lost stages.
            given = lost_reason if lead.status != StageCategory.LOST else None
            primary.append(_move_to(lead, target_id, target_category, given))
        else:
            secondary.append((lead_id, current_stage))
    return BulkPlan(order, primary, secondary, unchanged, skipped)
