"""Response bodies of the lead reads: list rows with their tags; one lead with pipelines, tags, timeline."""

from __future__ import annotations

import uuid

from api.schemas import Lead, OutModel, TimelineEntry


class LeadTag(OutModel):
    id: uuid.UUID
    name: str
    category: str
    color: str | None = None


class LeadListItem(Lead):
    tags: list[LeadTag]


class PipelineMembership(OutModel):
    """One pipeline the lead is in. `primary` is the placement leads.status mirrors; the others are
    secondary placements (removable, promotable with set-primary)."""

    pipeline_id: uuid.UUID
    pipeline_name: str
    stage_id: uuid.UUID
    stage_name: str
    category: str
    primary: bool


class TimelineItem(TimelineEntry):
    """A timeline entry with display names resolved: `actorName` is null for system entries."""

    actor_name: str | None = None
    from_stage_id: uuid.UUID | None = None
    to_stage_id: uuid.UUID | None = None
    from_stage_name: str | None = None
    to_stage_name: str | None = None
    # Why a status moved, when the move needed one (a lost reason).
    reason: str | None = None
    # The entries one operation wrote share their group (a Sales result's touch, follow-up and move); null
    # for messages and for history written before groups existed.
    group: str | None = None


class LeadDetail(Lead):
    pipelines: list[PipelineMembership]
    tags: list[LeadTag]
    timeline: list[TimelineItem]
