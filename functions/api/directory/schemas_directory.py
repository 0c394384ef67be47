"""Bodies of the organization's settings and members routes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from api.fields import Omittable
from api.schemas import CamelModel, OutModel
from leadcrm.directory.rules import Role, is_country_code
from leadcrm.directory.rules.sync import LOCALE, MAX_LOCALE, MAX_ORGANIZATION_NAME
from leadcrm.platform.timezones import MAX_TIMEZONE_LENGTH, is_iana_timezone

# The bounds the platform's organization events are read with (directory.rules.sync): what one writer may
# set, the other may too. A locale is BCP 47 as dashboards send it ("he", "en-GB", "zh-Hant-TW", "es-419").
OrganizationName = Annotated[str, Field(min_length=1, max_length=MAX_ORGANIZATION_NAME)]
Locale = Annotated[str, Field(min_length=2, max_length=MAX_LOCALE, pattern=f"^{LOCALE.pattern}$")]
Timezone = Annotated[str, Field(min_length=1, max_length=MAX_TIMEZONE_LENGTH)]
Country = Annotated[str, Field(min_length=2, max_length=2)]


class UpdateOrganizationSettingsBody(CamelModel):
    """Only the fields sent change. `country` and `defaultAssigneeUserId` may be null (cleared: national
    phone numbers are then read in the timezone's country; work nobody is named for goes to the oldest
    active owner); the others may not."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Studio Sol", "timezone": "Europe/Madrid"}]})

    name: Omittable[OrganizationName] = None
    timezone: Omittable[Timezone] = None
    country: Country | None = None
    locale: Omittable[Locale] = None
    default_assignee_user_id: uuid.UUID | None = None

    @field_validator("timezone")
    @classmethod
    def _iana(cls, value: str | None) -> str | None:
        if value is not None and not is_iana_timezone(value):
            raise ValueError("timezone must be an IANA time zone name, e.g. Asia/Jerusalem")
        return value

    @field_validator("country")
    @classmethod
    def _iso_country(cls, value: str | None) -> str | None:
        if value is None:
            return None
        code = value.upper()
        if not is_country_code(code):
            raise ValueError("country must be an ISO 3166-1 alpha-2 code, e.g. IL")
        return code

    @model_validator(mode="after")
    def _something_and_no_nulls(self) -> UpdateOrganizationSettingsBody:
        sent = self.model_fields_set
        if not sent:
            raise ValueError("send at least one setting")
        for name in sent - {"country", "default_assignee_user_id"}:
            if getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self

    def changes(self) -> dict[str, Any]:
        """The settings sent, by their column names."""
        columns = {"country": "country_code"}
        return {columns.get(name, name): getattr(self, name) for name in self.model_fields_set}


class OrganizationSettings(OutModel):
    organization_id: uuid.UUID
    name: str
    timezone: str
    country: str | None
    locale: str
    default_assignee_user_id: uuid.UUID | None
    # The platform's (plans): read-only here.
    features: list[str]
    # The region national phone numbers are read in: `country`, else the timezone's country, else null.
    phone_region: str | None
    updated_at: datetime

    @classmethod
    def from_view(cls, view: dict[str, Any]) -> OrganizationSettings:
        return cls.model_validate({**view, "country": view["country_code"]})


class OrganizationSettingsEnvelope(OutModel):
    data: OrganizationSettings


class Member(OutModel):
    membership_id: uuid.UUID
    user_id: uuid.UUID
    role: Role
    first_name: str | None
    last_name: str | None
    email: str | None
