"""Bodies of the returning-leads routes: the staff Reopen action, and the staff create's outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from api.schemas import CamelModel, Lead, OutModel


class ReopenLeadBody(CamelModel):
    """Optional: what the person said, appended to the lead's note (a repeat of its last sentence is not)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"note": "Called at lunchtime"}]})

    note: str | None = Field(default=None, max_length=5000)


class ReturnedLead(Lead):
    """A lead with what the returning-leads surfaces show: when and how it last came back."""

    paused_at: datetime | None
    consecutive_no_answer_count: int


class ReopenMeta(OutModel):
    # reopened: the lead was closed and is open now; already_open: it was open, nothing changed.
    outcome: Literal["reopened", "already_open"]


class ReopenEnvelope(OutModel):
    data: ReturnedLead
    meta: ReopenMeta


class ReopenedByCreateMeta(OutModel):
    outcome: Literal["reopened"] = "reopened"


class ReopenedByCreateEnvelope(OutModel):
    """The staff create's answer when the person's closed lead was reopened instead (200). A new lead is the
    usual 201 `{"data": <lead>}`."""

    data: Lead
    meta: ReopenedByCreateMeta = ReopenedByCreateMeta()
