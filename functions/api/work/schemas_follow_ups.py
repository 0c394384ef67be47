"""Bodies of a lead's follow-up and touches routes."""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict, Field, model_validator

from api.fields import Instant
from api.lead_versions import LeadVersion
from api.schemas import CamelModel, Lead, OutModel
from leadcrm.work.rules.call_outcomes import CallOutcome, TouchChannel
from leadcrm.work.rules.follow_ups import MAX_FOLLOW_UP_NOTE, FollowUpType, TouchFollowUpAction


class FollowUpBody(CamelModel):
    """PUT …/follow-up: the lead's next scheduled contact (an instant with its offset)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"at": "2025-03-14T09:30:00+01:00", "type": "call"}]})

    at: Instant
    type: FollowUpType
    note: str | None = Field(default=None, max_length=MAX_FOLLOW_UP_NOTE)
    version: LeadVersion | None = None  # the version read (or If-Match): stale is 409 LEAD_VERSION_CONFLICT


class TouchFollowUp(CamelModel):
    action: TouchFollowUpAction
    at: Instant | None = None
    type: FollowUpType | None = None
    note: str | None = Field(default=None, max_length=MAX_FOLLOW_UP_NOTE)

    @model_validator(mode="after")
    def _replace_says_when(self) -> TouchFollowUp:
        if self.action is TouchFollowUpAction.REPLACE and (self.at is None or self.type is None):
            raise ValueError("a replace needs at and type")
        if self.action is not TouchFollowUpAction.REPLACE and (self.at or self.type or self.note):
            raise ValueError("only a replace takes at, type and note")
        return self


class TouchBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"channel": "call"}]})
    channel: TouchChannel
    outcome: CallOutcome | None = None
    note: str | None = Field(default=None, max_length=5000)
    follow_up: TouchFollowUp | None = None
    trial_date: Instant | None = None
    version: LeadVersion | None = None

    @model_validator(mode="after")
    def _trial_date_with_a_booking(self) -> TouchBody:
        if self.trial_date is not None and self.outcome is not CallOutcome.APPOINTMENT_SCHEDULED:
            raise ValueError("trialDate goes with the appointment_scheduled outcome")
        return self


class FollowUpLead(Lead):
    """A lead with its contact stamps."""

    last_contact_attempt_at: datetime | None = None
    last_contacted_at: datetime | None = None
    first_human_response_at: datetime | None = None
    consecutive_no_answer_count: int | None = None


class FollowUpEnvelope(OutModel):
    data: FollowUpLead


class TouchResultData(OutModel):
    applied: bool
    lead: FollowUpLead


class TouchEnvelope(OutModel):
    data: TouchResultData
