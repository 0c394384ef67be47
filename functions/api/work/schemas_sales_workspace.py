"""Bodies of the Sales workspace's routes: the Board's stage write, the Sales sheet's results, access/me."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from api.fields import Instant
from api.lead_versions import LeadVersion
from api.leads.schemas_lead_moves import LostReason
from api.schemas import CamelModel, OutModel
from api.work.schemas_follow_ups import FollowUpLead
from leadcrm.directory.actions import WorkspaceAction
from leadcrm.work.rules.call_outcomes import CallOutcome, TouchChannel
from leadcrm.work.rules.follow_ups import MAX_FOLLOW_UP_NOTE, FollowUpType


class StageWriteBody(CamelModel):
    """PUT …/sales-workspace/leads/{leadId}/stage: the version read (or If-Match) and the stage dropped on."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"version": 3, "stageId": "0190b6a2-7c3e-7011-9a51-3f0e8c2b1a11"}]}
    )

    version: LeadVersion | None = None
    stage_id: uuid.UUID
    # Required entering a trial_booked stage (400 TRIAL_DATE_REQUIRED).
    trial_date: Instant | None = None
    # Required entering a lost stage (400 LOST_REASON_REQUIRED), as on every move.
    lost_reason: LostReason | None = None


class ResultFollowUp(CamelModel):
    """The new follow-up of a result (it replaces the lead's)."""

    at: Instant
    type: FollowUpType = FollowUpType.CALL
    note: str | None = Field(default=None, max_length=MAX_FOLLOW_UP_NOTE)


KEEP = "keep"


class ResultBody(CamelModel):
    """POST …/sales-workspace/leads/{leadId}/results: one contact result. `followUp`: an object replaces the
    follow-up, null clears it, "keep" (the default) keeps it."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "version": 3,
                    "outcome": "callback_requested",
                    "note": "Call back after 6pm",
                    "followUp": {"at": "2030-01-02T18:00:00+02:00"},
                }
            ]
        }
    )

    version: LeadVersion | None = None
    outcome: CallOutcome | None = None
    channel: TouchChannel = TouchChannel.CALL
    note: str | None = Field(default=None, min_length=1, max_length=5000)
    follow_up: ResultFollowUp | Literal["keep"] | None = KEEP
    stage_id: uuid.UUID | None = None
    trial_date: Instant | None = None
    lost_reason: LostReason | None = None

    @model_validator(mode="after")
    def _trial_date_with_a_booking_or_a_stage(self) -> ResultBody:
        if self.trial_date is not None and self.outcome is not CallOutcome.APPOINTMENT_SCHEDULED and not self.stage_id:
            raise ValueError("trialDate goes with the appointment_scheduled outcome or a stageId")
        if self.lost_reason is not None and self.stage_id is None:
            raise ValueError("lostReason goes with a stageId")
        return self


class SalesLeadEnvelope(OutModel):
    """The lead after the write, with its new version (also the ETag)."""

    data: FollowUpLead


class WorkspaceAccess(OutModel):
    role: str | None
    features: list[str]
    actions: list[WorkspaceAction]


class WorkspaceAccessEnvelope(OutModel):
    data: WorkspaceAccess
