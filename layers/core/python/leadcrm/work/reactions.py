"""What the work capability does when leads change: in the same unit of work (platform.messagebus) the
auto-task of a new lead and the deletion of an erased lead's tasks; from the bus, the task closing of a status
change (work.task_closing) and the return call of a returning lead (work.follow_ups)."""

from __future__ import annotations

from sqlalchemy import Connection, delete

from leadcrm.leads.messages import CreationWrites, ErasingAnswer, LeadCreated, LeadErasing, LeadsCreated
from leadcrm.work.auto_tasks import contact_task_writes, contact_tasks_writes
from leadcrm.work.tables import tasks


def contact_task_for_new_lead(conn: Connection, message: LeadCreated) -> CreationWrites | None:
    """The new lead's contact task (spec G1 step 7) and the lead's seed follow-up, written by the lead's own
    INSERT; None when the task cannot be built (logged)."""
    return contact_task_writes(
        message.organization_id, message.lead_id, message.contact_task_title, message.organization_timezone
    )


def contact_tasks_for_new_leads(conn: Connection, message: LeadsCreated) -> CreationWrites | None:
    """`contact_task_for_new_lead` for the leads of one multi-row INSERT (a batch of webhook leads)."""
    return contact_tasks_writes(
        message.organization_id, message.contact_task_titles, message.organization_timezone, message.lead_id
    )


def delete_tasks_of_erased_lead(conn: Connection, message: LeadErasing) -> ErasingAnswer:
    """Spec "Erasing a lead deletes its linked tasks": hard-deleted, since a task's title carries the name."""
    deleted = conn.execute(
        delete(tasks).where(
            tasks.c.organization_id == message.organization_id, tasks.c.linked_lead_id == message.lead_id
        )
    ).rowcount
    return ErasingAnswer(tasks_deleted=deleted)
