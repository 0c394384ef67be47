"""Request and response bodies of the pipelines and stages routes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, StrictInt, model_validator

from api.schemas import CamelModel, OutModel
from leadcrm.pipelines.rules.editing import MAX_NAME_LENGTH, MAX_STAGES_PER_PIPELINE
from leadcrm.pipelines.rules.statuses import StageCategory

# Whitespace is stripped first (CamelModel), so a blank name is an empty one and refused.
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_LENGTH)]


class NewStageBody(CamelModel):
    name: Name
    category: StageCategory


class CreatePipelineBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Personal training"}]})
    name: Name
    # Omitted: one stage per category, like the default pipeline. Given: they must cover new, a win and lost.
    stages: list[NewStageBody] | None = Field(default=None, min_length=1, max_length=MAX_STAGES_PER_PIPELINE)


class RenamePipelineBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Personal training"}]})
    name: Name


class AddStageBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Trial booked", "category": "trial_booked"}]})
    name: Name
    category: StageCategory
    # An index among the active stages (0 = first); omitted = last. Strict: `true` or "2" is not a place.
    position: Annotated[StrictInt, Field(ge=0, le=MAX_STAGES_PER_PIPELINE)] | None = None


class UpdateStageBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Trial booked", "category": "trial_booked"}]})
    name: Name | None = None
    category: StageCategory | None = None

    @model_validator(mode="after")
    def _something_to_change(self) -> UpdateStageBody:
        if self.name is None and self.category is None:
            raise ValueError("give a name, a category, or both")
        return self


class ReorderStagesBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "stageIds": [
                        "0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10",
                        "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11",
                        "0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12",
                    ]
                }
            ]
        }
    )
    stage_ids: list[uuid.UUID] = Field(min_length=1, max_length=MAX_STAGES_PER_PIPELINE)


class Stage(OutModel):
    id: uuid.UUID
    name: str
    category: StageCategory
    position: int
    archived_at: datetime | None


class Pipeline(OutModel):
    id: uuid.UUID
    name: str
    is_default: bool
    archived_at: datetime | None
    created_at: datetime
    stages: list[Stage]
