"""queue and prompt: the work queue's partial indexes, last inbound/outbound on leads, staff_prompt_states

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29

`leads.last_inbound_at` / `last_outbound_at` are nullable (a catalog change, no rewrite); the conversations
issue fills them. Each queue index covers only the open, live, unpaused leads that have its reason, so it
stays small however many closed leads an organization keeps.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# Copied, not imported: a migration must keep meaning what it meant when it was written.
QUEUE_SCOPE_SQL = (
    "archived_at IS NULL AND paused_at IS NULL "
    "AND status IN ('new', 'contacted', 'callback', 'trial_booked', 'no_show')"
)
UNTOUCHED_NEW_SQL = "status = 'new' AND last_contact_attempt_at IS NULL AND last_contacted_at IS NULL"
REAL_FOLLOW_UP_SQL = (
    "next_action_at IS NOT NULL AND NOT (next_action_type IS NOT DISTINCT FROM 'call' "
    "AND (next_action_at = created_at OR next_action_at IS NOT DISTINCT FROM returned_at))"
)
INBOUND_UNANSWERED_SQL = (
    "last_inbound_at IS NOT NULL AND (last_outbound_at IS NULL OR last_outbound_at < last_inbound_at)"
)

LEAD_INDEXES = {
    "ix_leads_queue_untouched_new": (["organization_id", "created_at", "id"], UNTOUCHED_NEW_SQL),
    "ix_leads_queue_unassigned": (["organization_id", "created_at", "id"], "assigned_to_user_id IS NULL"),
    "ix_leads_queue_follow_up": (["organization_id", "next_action_at", "id"], REAL_FOLLOW_UP_SQL),
    "ix_leads_queue_inbound_unanswered": (["organization_id", "last_inbound_at", "id"], INBOUND_UNANSWERED_SQL),
}


# A lead's best rank over its reasons (work.rules.attention; work.queue uses it in every branch of the
# queue page). A function so the page statement stays a few kilobytes: the same expression written out in
# each branch made it 21 kB, and statements over 8 kB cost a 40 ms round-trip stall with pg8000 (its socket
# buffer splits them, and Nagle's algorithm meets the server's delayed ACK). A one-SELECT SQL function is
# inlined by the planner, so it costs nothing at run time. rank = tier * 1e11 + (epoch for due follow-ups,
# 1e10 - epoch for arrivals).
QUEUE_RANK_FUNCTION = """
CREATE FUNCTION leadcrm_queue_rank(
    l leads, hot_since timestamptz, cooling_since timestamptz, sla_cutoff timestamptz, day_end timestamptz
) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT least(
    CASE WHEN l.last_inbound_at IS NOT NULL
              AND (l.last_outbound_at IS NULL OR l.last_outbound_at < l.last_inbound_at)
         THEN CASE WHEN l.last_inbound_at > hot_since THEN 0 WHEN l.last_inbound_at > cooling_since THEN 2 ELSE 3 END
              * 100000000000 + (10000000000 - extract(epoch FROM l.last_inbound_at)) END,
    CASE WHEN l.next_action_at < day_end
              AND NOT (l.next_action_type IS NOT DISTINCT FROM 'call'
                       AND (l.next_action_at = l.created_at OR l.next_action_at IS NOT DISTINCT FROM l.returned_at))
         THEN 100000000000 + extract(epoch FROM l.next_action_at) END,
    CASE WHEN l.status = 'new' AND l.last_contact_attempt_at IS NULL AND l.last_contacted_at IS NULL
              AND l.created_at <= sla_cutoff
         THEN CASE WHEN l.created_at > hot_since THEN 0 WHEN l.created_at > cooling_since THEN 2 ELSE 3 END
              * 100000000000 + (10000000000 - extract(epoch FROM l.created_at)) END,
    CASE WHEN l.returned_at > cooling_since AND l.status IN ('new', 'contacted')
              AND (l.last_contact_attempt_at IS NULL OR l.last_contact_attempt_at < l.returned_at)
              AND (l.last_contacted_at IS NULL OR l.last_contacted_at < l.returned_at)
              AND (l.next_action_at IS NULL OR (l.next_action_type = 'call' AND l.next_action_at = l.returned_at))
         THEN CASE WHEN l.returned_at > hot_since THEN 0 ELSE 2 END
              * 100000000000 + (10000000000 - extract(epoch FROM l.returned_at)) END,
    CASE WHEN l.assigned_to_user_id IS NULL
         THEN 300000000000 + (10000000000 - extract(epoch FROM l.created_at)) END
)
$$
"""
QUEUE_RANK_SIGNATURE = "leadcrm_queue_rank(leads, timestamptz, timestamptz, timestamptz, timestamptz)"


def upgrade() -> None:
    op.add_column("leads", sa.Column("last_inbound_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("leads", sa.Column("last_outbound_at", sa.DateTime(timezone=True), nullable=True))
    for name, (columns, condition) in LEAD_INDEXES.items():
        op.create_index(name, "leads", columns, postgresql_where=sa.text(f"{QUEUE_SCOPE_SQL} AND {condition}"))
    op.create_index(
        "ix_tasks_open_assignee_due",
        "tasks",
        ["organization_id", "assignee_user_id", "due_date"],
        postgresql_where=sa.text("status IN ('pending', 'in_progress') AND deleted_at IS NULL"),
    )
    op.execute(QUEUE_RANK_FUNCTION)
    op.create_table(
        "staff_prompt_states",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("last_shown_on", sa.Date(), nullable=True),
        sa.Column("snoozed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name="fk_staff_prompt_states_organization_id_organizations",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_staff_prompt_states_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("organization_id", "user_id", name="pk_staff_prompt_states"),
    )


def downgrade() -> None:
    op.drop_table("staff_prompt_states")
    op.execute(f"DROP FUNCTION {QUEUE_RANK_SIGNATURE}")
    op.drop_index("ix_tasks_open_assignee_due", table_name="tasks")
    for name in reversed(LEAD_INDEXES):
        op.drop_index(name, table_name="leads")
    op.drop_column("leads", "last_outbound_at")
    op.drop_column("leads", "last_inbound_at")
