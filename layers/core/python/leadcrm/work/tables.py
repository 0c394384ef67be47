"""The work tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    Time,
    Uuid,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.platform.db.columns import created_at_column, id_column, metadata, one_of, org_column, updated_at_column

TASK_STATUSES = ("pending", "in_progress", "completed", "cancelled")

TASK_PRIORITIES = ("low", "medium", "high")

tasks = Table(
    "tasks",
    metadata,
    id_column(),
    org_column(),
    Column("type", Text, nullable=False, server_default="general"),
    Column("title", Text, nullable=False),
    Column("description", Text),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("priority", Text, nullable=False, server_default="medium"),
    Column("source", Text, nullable=False, server_default="manual"),
    Column("due_date", Date),
    Column("due_time", Time),
    Column("assignee_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # NO ACTION on purpose: erasing a lead deletes its tasks first (their titles carry the lead's name).
    Column("linked_lead_id", Uuid, ForeignKey("leads.id")),
    # The deal a task is about (the rotting sweep's re-engagement task, deals.rotting).
    Column("linked_deal_id", Uuid, ForeignKey("deals.id", ondelete="SET NULL")),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("completed_at", DateTime(timezone=True)),
    Column("cancelled_at", DateTime(timezone=True)),
    Column("deleted_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", TASK_STATUSES), name="status"),
    CheckConstraint(one_of("priority", TASK_PRIORITIES), name="priority"),
    Index("ix_tasks_org_assignee_status", "organization_id", "assignee_user_id", "status", "due_date"),
    Index("ix_tasks_org_linked_lead", "organization_id", "linked_lead_id"),
    # The Tasks page: keyset pages on (due_date, id) within the organization.
    Index("ix_tasks_org_due_date", "organization_id", "due_date", "id"),
    # The urgent prompt: a staff member's open tasks due up to today.
    Index(
        "ix_tasks_open_assignee_due",
        "organization_id",
        "assignee_user_id",
        "due_date",
        postgresql_where=text("status IN ('pending', 'in_progress') AND deleted_at IS NULL"),
    ),
    # A lead has at most one open contact task: it is the lead's follow-up.
    Index(
        "tasks_open_contact_lead_unique_idx",
        "linked_lead_id",
        unique=True,
        postgresql_where=text("type = 'contact_lead' AND status IN ('pending', 'in_progress') AND deleted_at IS NULL"),
    ),
)

# The morning urgent prompt, per staff member and organization: the organization-local day it was last
# shown (once a day), and until when it is snoozed.
staff_prompt_states = Table(
    "staff_prompt_states",
    metadata,
    Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("last_shown_on", Date),
    Column("snoozed_until", DateTime(timezone=True)),
    updated_at_column(),
    PrimaryKeyConstraint("organization_id", "user_id", name="pk_staff_prompt_states"),
)

DIGEST_DELIVERY_STATUSES = ("sending", "sent", "failed")

# The morning digest (work.digest): at most one per staff member, organization and organization-local
# day. The row is claimed (INSERT … ON CONFLICT DO NOTHING) and committed before the mail is sent, so a
# second run the same day sends nothing more; the outcome (sent, or failed with the error) is written after.
staff_digest_deliveries = Table(
    "staff_digest_deliveries",
    metadata,
    id_column(),
    org_column(),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("local_date", Date, nullable=False),
    Column("status", Text, nullable=False, server_default="sending"),
    Column("counts", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("provider_message_id", Text),
    Column("error", Text),
    Column("sent_at", DateTime(timezone=True)),
    created_at_column(),
    CheckConstraint(one_of("status", DIGEST_DELIVERY_STATUSES), name="status"),
    Index("uq_staff_digest_deliveries_org_user_date", "organization_id", "user_id", "local_date", unique=True),
)
