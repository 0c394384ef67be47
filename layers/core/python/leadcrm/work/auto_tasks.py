"""The auto-task of a new lead (spec G1 step 7, also on G2): the owner is asked to contact it tomorrow.

The task is the lead's follow-up (spec "One object"): the same statement writes the lead's seed follow-up
(a call due at the lead's created_at, `work.follow_ups.with_intake_seed`), which the task stands for;
no task (no owner, or a failure) means no seed either.

It never blocks the create (spec "Auto-task never blocks lead create"): the insert runs in a SAVEPOINT, and
any failure rolls back only the savepoint, is logged, and is swallowed. No owner: silently skipped.
"""

from __future__ import annotations

import logging
import uuid

from sqlalchemy import Connection, Date, Executable, cast, func, insert, literal, select

from leadcrm.directory.rules import MembershipStatus, Role
from leadcrm.directory.tables import memberships, organizations
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.ids import uuid7
from leadcrm.work.follow_ups import with_intake_seed
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

CONTACT_LEAD_TASK = "contact_lead"


def create_contact_task(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, title: str) -> bool:
    """True when the task was written; False when skipped (no owner) or failed (logged, not raised)."""
    try:
        with conn.begin_nested():
            created = conn.execute(_contact_task_insert(organization_id, lead_id, title)).first()
    except Exception:
        logger.exception("auto-task not created", extra={"leadId": str(lead_id)})
        return False
    if created is None:
        logger.debug("auto-task skipped: no owner", extra={"organizationId": str(organization_id)})
        return False
    return True


def _contact_task_insert(organization_id: uuid.UUID, lead_id: uuid.UUID, title: str) -> Executable:
    """One INSERT … SELECT: the owner (oldest active owner membership) and tomorrow in the organization's
    timezone are found by the same statement that writes the task, so no owner means no row."""
    tomorrow_there = cast(func.timezone(organizations.c.timezone, sql_now()), Date) + 1
    owner_and_due_date = (
        select(
            literal(uuid7()),
            literal(organization_id),
            literal(CONTACT_LEAD_TASK),
            literal(title),
            literal("high"),
            literal("auto"),
            tomorrow_there,
            memberships.c.user_id,
            literal(lead_id),
        )
        .select_from(organizations.join(memberships, memberships.c.organization_id == organizations.c.id))
        .where(
            organizations.c.id == organization_id,
            memberships.c.role == Role.OWNER.value,
            memberships.c.status == MembershipStatus.ACTIVE.value,
            memberships.c.deleted_at.is_(None),
        )
        .order_by(memberships.c.created_at, memberships.c.id)
        .limit(1)
    )

    task_insert = (
        insert(tasks)
        .from_select(
            [
                tasks.c.id,
                tasks.c.organization_id,
                tasks.c.type,
                tasks.c.title,
                tasks.c.priority,
                tasks.c.source,
                tasks.c.due_date,
                tasks.c.assignee_user_id,
                tasks.c.linked_lead_id,
            ],
            owner_and_due_date,
        )
        .returning(tasks.c.linked_lead_id)
    )
    return with_intake_seed(task_insert, organization_id)
