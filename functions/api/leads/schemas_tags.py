"""Bodies of the tag routes (`/organizations/{orgId}/leads/tags`, `…/leads/{leadId}/tags`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from api.fields import Omittable
from api.schemas import CamelModel, OutModel

MAX_TAGS_PER_LEAD = 200

TagName = Annotated[str, Field(min_length=1, max_length=100)]
# "#1a2b3c", or a palette token of the dashboard ("blue", "green-500").
Color = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^(#[0-9A-Fa-f]{6}|[a-z][a-z0-9-]*)$")]


class TagCategory(StrEnum):
    LABEL = "label"  # a contact label staff put on
    PURCHASE = "purchase"  # what the contact bought (course purchases attach these)


class CreateTagBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Evening classes"}]})
    name: TagName
    category: TagCategory = TagCategory.LABEL
    color: Color | None = None


class UpdateTagBody(CamelModel):
    """A tag keeps its category: a purchase tag records what was bought, not a label to recast."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Evening classes", "color": "#3b82f6"}]})

    name: Omittable[TagName] = None  # a tag keeps a name
    color: Color | None = None  # null clears it

    @model_validator(mode="after")
    def _something_to_change(self) -> UpdateTagBody:
        if not self.model_fields_set:
            raise ValueError("give a name or a color")
        return self


class LeadTagsBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"tagIds": ["0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10", "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"]}]
        }
    )
    tag_ids: list[uuid.UUID] = Field(max_length=MAX_TAGS_PER_LEAD)


class Tag(OutModel):
    id: uuid.UUID
    name: str
    category: TagCategory
    color: str | None
    created_at: datetime
    updated_at: datetime
