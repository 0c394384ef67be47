"""tasks and touches: contact stamps on leads, lead consent per channel, the Tasks page's keyset index

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-29

The new lead columns are nullable: adding them is a catalog change (no table rewrite).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

LEAD_COLUMNS = ("last_contact_attempt_at", "last_contacted_at", "first_human_response_at")


def upgrade() -> None:
    for column in LEAD_COLUMNS:
        op.add_column("leads", sa.Column(column, sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "lead_consents",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("channel IN ('email', 'sms', 'whatsapp', 'call')", name=op.f("ck_lead_consents_channel")),
        sa.CheckConstraint("status IN ('granted', 'revoked')", name=op.f("ck_lead_consents_status")),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_consents_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_consents_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_consents")),
    )
    op.create_index("uq_lead_consents_lead_channel", "lead_consents", ["lead_id", "channel"], unique=True)
    op.create_index("ix_tasks_org_due_date", "tasks", ["organization_id", "due_date", "id"])


def downgrade() -> None:
    op.drop_index("ix_tasks_org_due_date", table_name="tasks")
    op.drop_index("uq_lead_consents_lead_channel", table_name="lead_consents")
    op.drop_table("lead_consents")
    for column in reversed(LEAD_COLUMNS):
        op.drop_column("leads", column)
