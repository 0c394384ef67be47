"""assignment rules and staff availability.

Revision ID: 0027
Revises: 0025
Create Date: 2026-12-05

`lead_assignment_rules`: the organization's ordered rules that give a lead arriving without an owner one
(leads.assignment). `staff_availability`: away-until and working hours per staff member and organization.
`lead_import_jobs.apply_assignment_rules`: the CSV import option that runs the rules on the leads it creates.
Expand-only: two new tables and a column with a default.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0027"
down_revision = "0025"
branch_labels = None
depends_on = None


def _stamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "lead_assignment_rules",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("active", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("sources", ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("campaign_ids", ARRAY(sa.Uuid()), server_default=sa.text("'{}'::uuid[]"), nullable=False),
        sa.Column("pipeline_ids", ARRAY(sa.Uuid()), server_default=sa.text("'{}'::uuid[]"), nullable=False),
        sa.Column("form_refs", ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("languages", ARRAY(sa.Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("window_from", sa.Integer(), nullable=True),
        sa.Column("window_to", sa.Integer(), nullable=True),
        sa.Column("strategy", sa.Text(), nullable=False),
        sa.Column("user_ids", ARRAY(sa.Uuid()), server_default=sa.text("'{}'::uuid[]"), nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=True),
        sa.Column("cursor", sa.Integer(), server_default=sa.text("0"), nullable=False),
        *_stamps(),
        sa.CheckConstraint(
            "strategy IN ('round_robin', 'least_loaded', 'fixed')", name=op.f("ck_lead_assignment_rules_strategy")
        ),
        sa.CheckConstraint("position >= 0", name=op.f("ck_lead_assignment_rules_position_not_negative")),
        sa.CheckConstraint(
            "(window_from IS NULL) = (window_to IS NULL)",
            name=op.f("ck_lead_assignment_rules_window_both_or_neither"),
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_assignment_rules_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_assignment_rules")),
    )
    op.create_index(
        "ix_lead_assignment_rules_org_position", "lead_assignment_rules", ["organization_id", "position", "id"]
    )
    op.create_table(
        "staff_availability",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("away_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("working_hours", JSONB(), server_default=sa.text("'[]'::jsonb"), nullable=False),
        *_stamps(),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_staff_availability_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_staff_availability_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("organization_id", "user_id", name=op.f("pk_staff_availability")),
    )
    op.add_column(
        "lead_import_jobs",
        sa.Column("apply_assignment_rules", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("lead_import_jobs", "apply_assignment_rules")
    op.drop_table("staff_availability")
    op.drop_table("lead_assignment_rules")
