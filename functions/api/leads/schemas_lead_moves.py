"""Request and response bodies of the lead moves: PATCH lead, pipeline placements, set-primary, bulk moves,
archive."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import ConfigDict, EmailStr, Field, StrictBool, model_validator

from api.fields import Instant, Omittable
from api.lead_versions import LeadVersion
from api.schemas import CamelModel, OutModel
from leadcrm.leads.moves import MAX_BULK_LEADS
from leadcrm.pipelines.rules.statuses import StageCategory

LostReason = Annotated[str, Field(min_length=1, max_length=500)]
LeadIds = Annotated[list[uuid.UUID], Field(min_length=1, max_length=MAX_BULK_LEADS)]


class UpdateLeadBody(CamelModel):
    """PATCH a lead: every field optional, at least one. stageId wins over status. Null clears trialDate,
    the assignee (assigneeUserId: null unassigns) and the contact fields; a stage, a status, a lost reason or
    the test flag cannot be null."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"status": "contacted"}]})

    stage_id: Omittable[uuid.UUID] = None
    status: Omittable[StageCategory] = None
    lost_reason: Omittable[LostReason] = None
    trial_date: Instant | None = None
    assignee_user_id: uuid.UUID | None = None
    is_test: Omittable[StrictBool] = None
    name: str | None = Field(default=None, min_length=1, max_length=200)
    email: EmailStr | None = None
    phone: str | None = Field(default=None, min_length=3, max_length=32, pattern=r"^[0-9+()\-\s.]+$")
    note: str | None = Field(default=None, max_length=5000)
    locale: str | None = Field(default=None, min_length=2, max_length=16)
    # The version the caller read (or If-Match): a stale one is 409 LEAD_VERSION_CONFLICT.
    version: LeadVersion | None = None

    @model_validator(mode="after")
    def _something_to_change(self) -> UpdateLeadBody:
        if not self.model_fields_set:
            raise ValueError("give at least one field to change")
        return self


class AddPipelineBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"pipelineId": "0190b6a2-7c3e-7010-9a51-3f0e8c2b1a10"}]})
    pipeline_id: uuid.UUID
    # Omitted: the pipeline's first active `new` stage.
    stage_id: uuid.UUID | None = None
    version: LeadVersion | None = None


class MovePlacementBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"stageId": "0190b6a2-7c3e-7011-9a51-3f0e8c2b1a11"}]})
    stage_id: uuid.UUID
    # Only for the primary pipeline, when the move enters lost.
    lost_reason: LostReason | None = None
    version: LeadVersion | None = None


class SetPrimaryBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"lostReason": "price"}]})
    # Needed when the promoted stage is a lost one and the lead is not lost yet.
    lost_reason: LostReason | None = None
    version: LeadVersion | None = None


class BulkMoveStageBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "stageId": "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12",
                    "leadIds": ["0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10", "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"],
                }
            ]
        }
    )
    stage_id: uuid.UUID
    lead_ids: LeadIds
    # Needed when the target stage is a lost one (it becomes the reason of every lead that enters lost).
    lost_reason: LostReason | None = None


class BulkArchiveBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "leadIds": ["0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10", "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"],
                    "archived": True,
                }
            ]
        }
    )
    lead_ids: LeadIds
    archived: StrictBool


class LeadPlacement(OutModel):
    """Where the lead stands in one pipeline: `primary` is the placement its status mirrors."""

    lead_id: uuid.UUID
    pipeline_id: uuid.UUID
    stage_id: uuid.UUID
    primary: bool


class SkippedLead(OutModel):
    lead_id: uuid.UUID
    reason: str


class BulkMoveOutcome(OutModel):
    moved: list[uuid.UUID]
    skipped: list[SkippedLead]


class BulkArchiveOutcome(OutModel):
    changed: list[uuid.UUID]
    skipped: list[SkippedLead]
