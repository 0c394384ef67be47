"""Which status changes close a lead's tasks (spec "Lead tasks close automatically").

A lead that became lost, converted or customer has no sales work left: every open task linked to it is
cancelled, whatever its type. A linked task is lead work by definition (the follow-up's contact_lead task,
an automation's "call the new lead", a manual task someone filed against the lead), and the spec says a
lead's tasks follow the lead's status. Unlinked tasks are never touched: they cannot be found by lead.

Nothing re-opens a task: a lead that comes back (returning leads) starts with no open task, and its next
follow-up creates a new one.
"""

from __future__ import annotations

from leadcrm.pipelines.rules.statuses import StageCategory

# The statuses whose arrival cancels the lead's open tasks. `frozen` is a pause, not an end: its tasks stay.
TASK_CLOSING_STATUSES = frozenset({StageCategory.LOST, StageCategory.CONVERTED, StageCategory.CUSTOMER})

# Task statuses that count as open (the rest are final).
OPEN_TASK_STATUSES = ("pending", "in_progress")

# The timeline entry written once per status change that cancelled something.
TASKS_CLOSED_ACTIVITY = "tasks_closed"


def closes_tasks(to_status: str | None) -> bool:
    """True when a lead arriving in `to_status` has its open tasks cancelled; unknown statuses close nothing."""
    try:
        return StageCategory(to_status) in TASK_CLOSING_STATUSES
    except ValueError:
        return False
