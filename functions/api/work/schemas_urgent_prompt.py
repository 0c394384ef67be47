"""The urgent prompt's bodies: the snooze request and the prompt state every route answers with."""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict, Field

from api.schemas import CamelModel, OutModel
from leadcrm.work.rules.attention import URGENT_LEADS_SHOWN_CAP, ReviewTarget, SnoozeUntil


class SnoozeBody(CamelModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"until": "one_hour"}]})
    until: SnoozeUntil


class UrgentCountsOut(OutModel):
    overdue_tasks: int
    due_today_tasks: int
    leads_needing_attention: int = Field(
        ge=0,
        le=URGENT_LEADS_SHOWN_CAP,
        description=(
            f"Counted up to {URGENT_LEADS_SHOWN_CAP}: {URGENT_LEADS_SHOWN_CAP} means {URGENT_LEADS_SHOWN_CAP} or "
            f"more (the dashboard shows {URGENT_LEADS_SHOWN_CAP - 1}+). `blocking` and `reviewTarget` are "
            "decided as on the exact count."
        ),
    )


class UrgentPromptState(OutModel):
    show: bool
    blocking: bool
    counts: UrgentCountsOut
    snoozed_until: datetime | None
    review_target: ReviewTarget
