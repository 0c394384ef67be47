"""Response body of the work queue: a lead's summary with why it is in the queue and its tier."""

from __future__ import annotations

import uuid
from datetime import datetime

from api.schemas import OutModel, assignee_from


class QueueItem(OutModel):
    id: uuid.UUID
    name: str | None
    phone: str | None
    status: str
    assignee_user_id: uuid.UUID | None = assignee_from("assigned_to_user_id")
    next_action_at: datetime | None
    next_action_type: str | None
    returned_at: datetime | None
    returned_from_status: str | None
    returned_via: str | None
    # inbound_unanswered, follow_up_overdue, follow_up_due_today, new_untouched, returned, unassigned
    reasons: list[str]
    # 0 hot, 1 due follow-ups, 2 cooling, 3 backlog (see leadcrm.work.rules.attention)
    tier: int
    # The lead's version (what its sheet's writes send back as If-Match or `version`).
    version: int
