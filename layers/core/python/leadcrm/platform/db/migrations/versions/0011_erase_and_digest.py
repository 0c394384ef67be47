"""erase and digest: the morning digest's deliveries (one per staff member, organization and local day)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29

Erasing a lead needs no schema change: tasks.linked_lead_id stays ON DELETE NO ACTION on purpose (the
erase deletes the lead's tasks first) and every other foreign key to leads already cascades or sets NULL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "staff_digest_deliveries",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("local_date", sa.Date(), nullable=False),
        sa.Column("status", sa.Text(), server_default="sending", nullable=False),
        sa.Column(
            "counts", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("provider_message_id", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("status IN ('sending', 'sent', 'failed')", name=op.f("ck_staff_digest_deliveries_status")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_staff_digest_deliveries_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_staff_digest_deliveries_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_staff_digest_deliveries")),
    )
    op.create_index(
        "uq_staff_digest_deliveries_org_user_date",
        "staff_digest_deliveries",
        ["organization_id", "user_id", "local_date"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("uq_staff_digest_deliveries_org_user_date", table_name="staff_digest_deliveries")
    op.drop_table("staff_digest_deliveries")
