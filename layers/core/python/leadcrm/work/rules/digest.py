"""The morning digest: when an organization is in its morning, what a staff member's counts say, the mail.

The scheduled job runs every 15 minutes for every organization; these rules decide which organizations are
in their morning now (by their own timezone) and what each staff member is told. Which day it is, is the
organization's local date: running the job again the same local day sends nothing more (the deliveries
table holds one row per organization, user and local date).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time

from leadcrm.work.rules.attention import URGENT_LEADS_SHOWN_CAP, UrgentCounts
from leadcrm.work.rules.follow_ups import organization_zone

# The digest goes out at the first run at or after 07:00 local. Runs until 10:00 still send it, so a job
# that missed the 07:00 runs (an outage, a deploy) catches up the same morning; later in the day nobody
# wants yesterday's news as "this morning's" digest, so it is skipped for that day.
MORNING_STARTS = time(7, 0)
MORNING_ENDS = time(10, 0)


def local_now(now: datetime, timezone_name: str | None) -> datetime:
    """`now` (timezone-aware) on the organization's wall clock (an unknown timezone reads as UTC)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return now.astimezone(organization_zone(timezone_name))


def in_morning_window(local: datetime) -> bool:
    """True from 07:00 (inclusive) to 10:00 (exclusive), local time."""
    return MORNING_STARTS <= local.time() < MORNING_ENDS


def counts_payload(counts: UrgentCounts, *, includes_leads: bool) -> dict[str, int]:
    """What the deliveries table keeps of the counts a staff member was sent (camelCase, as the prompt's)."""
    payload = {"overdueTasks": counts.overdue_tasks, "dueTodayTasks": counts.due_today_tasks}
    if includes_leads:
        payload["leadsNeedingAttention"] = counts.leads_shown
    return payload


def worth_sending(counts: UrgentCounts) -> bool:
    """Nothing urgent, no mail: a digest that says "0, 0, 0" teaches people to ignore it. The counts are
    the urgent prompt's (`work.urgent_prompt.urgent_counts`): one definition of urgent."""
    return counts.total > 0


@dataclass(frozen=True)
class DigestMail:
    subject: str
    text: str


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def compose_digest(
    counts: UrgentCounts, organization_name: str, local_date: date, *, includes_leads: bool
) -> DigestMail:
    """The mail of one staff member (English; counts only, no lead names: a mailbox is not the CRM).
    `includes_leads`: an owner/admin, who is told the leads needing attention too (spec: lead counts are
    for owner/admin only)."""
    organization_name = " ".join(organization_name.split())  # no line breaks in a Subject header
    parts = []
    if counts.overdue_tasks:
        parts.append(f"{_plural(counts.overdue_tasks, 'overdue task', 'overdue tasks')}")
    if counts.due_today_tasks:
        parts.append(f"{_plural(counts.due_today_tasks, 'task', 'tasks')} due today")
    if counts.leads_capped:
        parts.append(f"{URGENT_LEADS_SHOWN_CAP - 1}+ leads need attention")
    elif counts.leads_needing_attention:
        parts.append(f"{_plural(counts.leads_needing_attention, 'lead needs', 'leads need')} attention")
    summary = ", ".join(parts) if parts else "nothing urgent"
    lines = [
        f"Good morning! Here is what needs you today ({local_date.isoformat()}) at {organization_name}:",
        "",
        f"- Overdue tasks: {counts.overdue_tasks}",
        f"- Tasks due today: {counts.due_today_tasks}",
    ]
    if includes_leads:
        shown = f"{URGENT_LEADS_SHOWN_CAP - 1}+" if counts.leads_capped else str(counts.leads_needing_attention)
        lines.append(f"- Leads needing attention: {shown}")
    lines += ["", "Open LeadCRM to review them."]
    return DigestMail(subject=f"{organization_name}: {summary}", text="\n".join(lines))
