"""Bodies of the integration connection routes and the CSV import routes."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator

from api.schemas import CamelModel, OutModel

# Meta ids (page, phone number) are numeric strings.
ExternalId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[0-9]+$")]
AccessToken = Annotated[str, Field(min_length=8, max_length=2048, pattern=r"^\S+$")]
DisplayName = Annotated[str, Field(min_length=1, max_length=200)]


class ConnectMetaBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"pageId": "104857600123456", "accessToken": "EAAGm0PX4ZCpsBA...", "pageName": "Studio Sol"}]
        }
    )
    page_id: ExternalId
    access_token: AccessToken = Field(description="A page access token with leads_retrieval; kept in Secrets Manager")
    page_name: DisplayName | None = None


class ConnectWhatsAppBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "phoneNumberId": "109876543210987",
                    "accessToken": "EAAGm0PX4ZCpsBA...",
                    "displayPhoneNumber": "+34 612 34 56 78",
                }
            ]
        }
    )
    phone_number_id: ExternalId
    access_token: AccessToken = Field(description="A system-user token of the WABA; kept in Secrets Manager")
    display_phone_number: DisplayName | None = None


class Connection(OutModel):
    """A connection as the dashboard sees it: never the token, never where it is kept."""

    id: uuid.UUID
    provider: str
    external_account_id: str
    display_name: str | None
    status: str
    connected_by_user_id: uuid.UUID | None
    connected_at: datetime
    disconnected_at: datetime | None
    created_at: datetime
    updated_at: datetime


EventName = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^\S(.*\S)?$")]


class MetaCrmEventsBody(CamelModel):
    """Conversions API for CRM settings of one Meta connection, replaced whole."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "datasetId": "1234567890123456",
                    "enabled": True,
                    "sendHashedContact": False,
                    "stageEventNames": {"0191d3a4-6a1e-7cc0-8f0a-3c1e2d4b5a60": "Qualified Lead"},
                }
            ]
        }
    )
    dataset_id: ExternalId = Field(description="The Meta dataset (pixel) id the CRM events go to")
    enabled: bool = Field(description="Send CRM events for this page's leads")
    send_hashed_contact: bool = Field(
        False, description="Also send the lead's email and phone, normalized and SHA-256 hashed"
    )
    stage_event_names: dict[uuid.UUID, EventName] = Field(
        default_factory=dict,
        max_length=200,
        description="The event name at Meta per stage id; a stage left out is sent under its own name",
    )


class MetaCrmEvents(OutModel):
    """A Meta connection's CRM events settings (the token is the connection's own, never shown)."""

    connection_id: uuid.UUID
    page_id: str
    configured: bool
    dataset_id: str | None
    enabled: bool
    send_hashed_contact: bool
    stage_event_names: dict[str, str]
    updated_at: datetime | None


class LeadField(StrEnum):
    NAME = "name"
    FIRST_NAME = "firstName"
    LAST_NAME = "lastName"
    EMAIL = "email"
    PHONE = "phone"
    NOTE = "note"
    LOCALE = "locale"


# lead field (camelCase) -> the domain's field name
LEAD_FIELD_NAMES = {
    LeadField.NAME: "name",
    LeadField.FIRST_NAME: "first_name",
    LeadField.LAST_NAME: "last_name",
    LeadField.EMAIL: "email",
    LeadField.PHONE: "phone",
    LeadField.NOTE: "note",
    LeadField.LOCALE: "locale",
}


NO_NUL = r"^[^\x00]*$"


class CreateImportBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"fileName": "leads.csv", "columnMapping": {"name": "Full name", "email": "Email", "phone": "Phone"}}
            ]
        }
    )
    # PostgreSQL text cannot hold U+0000: refused here (400) rather than failing the insert (500)
    file_name: str | None = Field(default=None, min_length=1, max_length=255, pattern=NO_NUL)
    column_mapping: dict[LeadField, Annotated[str, Field(min_length=1, max_length=200, pattern=NO_NUL)]] | None = Field(
        default=None,
        description="lead field -> the CSV header that holds it (case-insensitive). Without it, common headers "
        "(Name, First name, Last name, Email, Phone, Mobile, Notes, ...) are recognised.",
    )
    apply_assignment_rules: bool = Field(
        default=False,
        description="true: the leads the import creates get owners from the organization's assignment rules "
        "(source `import`); false (default): they stay unassigned, as an old export is history.",
    )

    @field_validator("column_mapping")
    @classmethod
    def _mapping_names_someone(cls, value: dict[LeadField, str] | None) -> dict[LeadField, str] | None:
        contact = {LeadField.NAME, LeadField.FIRST_NAME, LeadField.LAST_NAME, LeadField.EMAIL, LeadField.PHONE}
        if value is not None and not (contact & value.keys()):
            raise ValueError("map at least one of name, firstName, lastName, email or phone")
        return value


class ImportJob(OutModel):
    id: uuid.UUID
    status: str = Field(description="awaiting_upload | queued | running | completed | failed")
    file_name: str | None
    column_mapping: dict[str, str]
    apply_assignment_rules: bool
    rows_processed: int
    created_count: int
    duplicate_count: int
    invalid_count: int
    error_code: str | None
    error_message: str | None
    created_by_user_id: uuid.UUID | None
    started_at: datetime | None
    finished_at: datetime | None
    created_at: datetime
    updated_at: datetime


class Upload(OutModel):
    url: str
    method: str = "PUT"
    headers: dict[str, str]
    expires_at: datetime


class NewImportOut(OutModel):
    job: ImportJob
    upload: Upload


class ImportRowOutcome(StrEnum):
    CREATED = "created"
    DUPLICATE = "duplicate"
    INVALID = "invalid"


class ImportRowReport(OutModel):
    row_number: int = Field(description="1 is the first row after the header")
    outcome: ImportRowOutcome
    lead_id: uuid.UUID | None = None
    existing_lead_id: uuid.UUID | None = None
    errors: list[dict[str, Any]] | None = None
