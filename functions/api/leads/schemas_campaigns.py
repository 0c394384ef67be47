"""Bodies of the campaign hook routes (`/organizations/{orgId}/leads/campaigns`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from api.fields import Omittable
from api.schemas import CamelModel, OutModel

CampaignName = Annotated[str, Field(min_length=1, max_length=200)]
# A channel names where leads come from (manual, minisite, facebook, ...): a short lower-case word.
Channel = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9_]*$")]
# "#1a2b3c", or a palette token of the dashboard ("blue", "green-500").
Color = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^(#[0-9A-Fa-f]{6}|[a-z][a-z0-9-]*)$")]


class CreateCampaignBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Spring open day"}]})
    name: CampaignName
    channel: Channel | None = None
    color: Color | None = None


class UpdateCampaignBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Spring open day", "color": "#3b82f6"}]})
    name: Omittable[CampaignName] = None  # a campaign keeps a name
    color: Color | None = None  # null clears it
    archived: Omittable[bool] = None

    @model_validator(mode="after")
    def _something_to_change(self) -> UpdateCampaignBody:
        if not self.model_fields_set:
            raise ValueError("give a name, a color or archived")
        return self


class Campaign(OutModel):
    id: uuid.UUID
    name: str
    channel: str
    external_ref: str | None
    color: str | None
    archived_at: datetime | None
    created_at: datetime
    updated_at: datetime
