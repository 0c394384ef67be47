"""Bodies of the public capture route (G1): what a minisite form may send, and the one answer it gets."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ConfigDict, EmailStr, Field, field_validator, model_validator

from api.schemas import CamelModel, OutModel

# Idempotency-Key on the public route: printable ASCII, as the staff routes accept (leadcrm.platform.idempotency).
IDEMPOTENCY_KEY_PATTERN = r"^[\x20-\x7e]{1,255}$"


class UtmParameters(CamelModel):
    """The page's utm_* query parameters, as the form read them: kept on the lead's first touch (never
    overwritten by a later visit) and on the touch of a later submission."""

    source: str | None = Field(default=None, max_length=200)
    medium: str | None = Field(default=None, max_length=200)
    campaign: str | None = Field(default=None, max_length=200)
    term: str | None = Field(default=None, max_length=200)
    content: str | None = Field(default=None, max_length=200)


class PublicLeadBody(CamelModel):
    """A minisite submission. Same field rules as a staff create; no source, test flag or assignee.

    Web forms send empty strings for fields the visitor left blank: those count as not sent, so an enquiry
    is never refused over an empty optional field.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"name": "Ana López", "email": "ana.lopez@example.com", "phone": "+34612345678"}]
        }
    )

    name: str | None = Field(default=None, max_length=200)
    email: EmailStr | None = None
    phone: str | None = Field(default=None, min_length=3, max_length=32, pattern=r"^[0-9+()\-\s.]+$")
    locale: str | None = Field(default=None, min_length=2, max_length=16)
    note: str | None = Field(default=None, max_length=5000)
    # The minisite surface that sent it; only `lead-popup` and `contact-form` are kept (others are dropped).
    campaign_ref: str | None = Field(default=None, max_length=64)
    # An event of this organization: its campaign is resolved on the server. Another id is ignored.
    minisite_event_id: uuid.UUID | None = None
    utm: UtmParameters | None = None
    # A staff-path field: accepted so existing forms keep working, and always dropped.
    campaign_id: str | None = Field(default=None, max_length=64)

    @field_validator("name", "email", "phone", "locale", "note", "campaign_ref", "campaign_id", mode="before")
    @classmethod
    def _blank_is_not_sent(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @model_validator(mode="after")
    def _someone_to_contact(self) -> PublicLeadBody:
        if not (self.name or self.email or self.phone):
            raise ValueError("a lead needs at least a name, an email or a phone")
        return self


class Received(OutModel):
    received: bool
