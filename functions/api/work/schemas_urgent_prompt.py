"""The urgent prompt's bodies: the snooze request and the prompt state every route answers with."""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict

from api.schemas import CamelModel, OutModel
from leadcrm.work.rules.attention import ReviewTarget, SnoozeUntil


class SnoozeBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"until": "one_hour"}]})
    until: SnoozeUntil


class UrgentCountsOut(OutModel):
    overdue_tasks: int
    due_today_tasks: int
    leads_needing_attention: int


class UrgentPromptState(OutModel):
    show: bool
    blocking: bool
    counts: UrgentCountsOut
    snoozed_until: datetime | None
    review_target: ReviewTarget
