"""Bodies and answers of the outbound webhook routes (issue 25)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from api.fields import Omittable
from api.schemas import CamelModel, OutModel
from leadcrm.integrations.rules.events import EVENT_TYPES

WebhookEventType = StrEnum("WebhookEventType", {t.replace(".", "_").upper(): t for t in EVENT_TYPES})  # type: ignore[misc]
WebhookUrl = Annotated[
    str,
    Field(
        min_length=8,
        max_length=2048,
        description="https:// on a public address (the name is resolved when saved and again at each send)",
    ),
]
EventTypes = Annotated[list[WebhookEventType], Field(min_length=1, max_length=len(EVENT_TYPES))]


class WebhookDeliveryStatus(StrEnum):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


EXAMPLE = {
    "url": "https://hooks.example.com/leadcrm",
    "eventTypes": ["lead.created", "lead.converted"],
    "includePersonalData": False,
}


class CreateWebhookSubscriptionBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [EXAMPLE]})
    url: WebhookUrl
    event_types: EventTypes
    include_personal_data: bool = Field(
        default=False,
        description="the lead's name, email and phone in lead events; needs the plan's webhook_personal_data",
    )


class UpdateWebhookSubscriptionBody(CamelModel):
    """Only the fields sent change; `enabled: true` re-enables an endpoint disabled for failing."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"enabled": True}]})
    url: Omittable[WebhookUrl] = None
    event_types: Omittable[EventTypes] = None
    include_personal_data: Omittable[bool] = None
    enabled: Omittable[bool] = None

    @model_validator(mode="after")
    def _something(self) -> UpdateWebhookSubscriptionBody:
        if not self.model_fields_set:
            raise ValueError("send at least one field")
        return self


class WebhookSubscription(OutModel):
    """An endpoint as staff see it: never its secret (answered once, by create and rotate)."""

    id: uuid.UUID
    url: str
    event_types: list[str]
    include_personal_data: bool
    enabled: bool
    disabled_reason: str | None
    disabled_at: datetime | None
    created_by_user_id: uuid.UUID | None
    created_at: datetime
    updated_at: datetime


class WebhookSubscriptionWithSecret(WebhookSubscription):
    secret: str = Field(description="whsec_… : the signing secret, shown this once")


class WebhookDelivery(OutModel):
    """One event to one endpoint: `id` is the `webhook-id` header of every attempt and replay. No body."""

    id: uuid.UUID
    subscription_id: uuid.UUID
    event_id: uuid.UUID
    event_type: str
    status: str
    attempts: int
    first_attempt_at: datetime | None
    last_attempt_at: datetime | None
    next_attempt_at: datetime | None
    response_code: int | None
    latency_ms: int | None
    last_error: str | None
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
