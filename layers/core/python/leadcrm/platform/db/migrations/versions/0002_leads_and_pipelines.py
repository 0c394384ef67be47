"""leads and pipelines

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_limit_counters",
        sa.Column("bucket", sa.Text(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("hits", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.PrimaryKeyConstraint("bucket", "window_start", name="pk_rate_limit_counters"),
    )
    op.create_index("ix_rate_limit_counters_window_start", "rate_limit_counters", ["window_start"], unique=False)
    op.create_table(
        "lead_campaigns",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), server_default="manual", nullable=False),
        sa.Column("external_ref", sa.Text(), nullable=True),
        sa.Column("color", sa.Text(), nullable=True),
        sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_campaigns_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_campaigns")),
    )
    op.create_index(
        "uq_lead_campaigns_org_channel_ref",
        "lead_campaigns",
        ["organization_id", "channel", "external_ref"],
        unique=True,
        postgresql_where=sa.text("external_ref IS NOT NULL"),
    )
    op.create_table(
        "lead_tags",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("category", sa.Text(), server_default="label", nullable=False),
        sa.Column("color", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("category IN ('label', 'purchase')", name=op.f("ck_lead_tags_category")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_tags_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_tags")),
    )
    op.create_index(
        "uq_lead_tags_org_category_name",
        "lead_tags",
        ["organization_id", "category", sa.literal_column("lower(name)")],
        unique=True,
    )
    op.create_table(
        "minisite_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("campaign_id", sa.Uuid(), nullable=True),
        sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["lead_campaigns.id"],
            name=op.f("fk_minisite_events_campaign_id_lead_campaigns"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_minisite_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_minisite_events")),
    )
    op.create_table(
        "lead_pipeline_placements",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("pipeline_id", sa.Uuid(), nullable=False),
        sa.Column("stage_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_pipeline_placements_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_pipeline_placements_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["pipeline_id"],
            ["pipelines.id"],
            name=op.f("fk_lead_pipeline_placements_pipeline_id_pipelines"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["stage_id"], ["pipeline_stages.id"], name=op.f("fk_lead_pipeline_placements_stage_id_pipeline_stages")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_pipeline_placements")),
    )
    op.create_index(
        "ix_lead_pipeline_placements_org_pipeline_stage",
        "lead_pipeline_placements",
        ["organization_id", "pipeline_id", "stage_id"],
        unique=False,
    )
    op.create_index(
        "uq_lead_pipeline_placements_lead_pipeline", "lead_pipeline_placements", ["lead_id", "pipeline_id"], unique=True
    )
    op.create_table(
        "lead_receipts",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("duplicate", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_receipts_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_receipts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_receipts")),
    )
    op.create_index(
        "ix_lead_receipts_org_lead", "lead_receipts", ["organization_id", "lead_id", "received_at"], unique=False
    )
    op.create_table(
        "lead_tag_assignments",
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("tag_id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_tag_assignments_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_tag_assignments_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tag_id"], ["lead_tags.id"], name=op.f("fk_lead_tag_assignments_tag_id_lead_tags"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("lead_id", "tag_id", name="pk_lead_tag_assignments"),
    )
    op.create_index(
        "ix_lead_tag_assignments_org_tag_lead",
        "lead_tag_assignments",
        ["organization_id", "tag_id", "lead_id"],
        unique=False,
    )
    # PostgreSQL rewrites leads once to fill the generated column.
    op.add_column(
        "leads",
        sa.Column(
            "phone_digits",
            sa.Text(),
            sa.Computed("regexp_replace(coalesce(phone, ''), '[^0-9]', '', 'g')", persisted=True),
            nullable=True,
        ),
    )
    op.drop_index(op.f("ix_leads_org_phone"), table_name="leads")
    op.create_index("ix_leads_org_assignee", "leads", ["organization_id", "assigned_to_user_id", "id"], unique=False)
    op.create_index("ix_leads_org_campaign", "leads", ["organization_id", "campaign_id", "id"], unique=False)
    op.create_index("ix_leads_org_phone_digits", "leads", ["organization_id", "phone_digits"], unique=False)
    op.create_index(
        "ix_leads_org_pipeline_stage", "leads", ["organization_id", "pipeline_id", "stage_id", "id"], unique=False
    )
    op.create_index(
        "ix_leads_org_status_changed_at", "leads", ["organization_id", "status_changed_at", "id"], unique=False
    )
    op.create_index("ix_leads_org_updated_at", "leads", ["organization_id", "updated_at", "id"], unique=False)
    op.create_foreign_key(
        op.f("fk_leads_campaign_id_lead_campaigns"),
        "leads",
        "lead_campaigns",
        ["campaign_id"],
        ["id"],
        ondelete="SET NULL",
    )


def downgrade() -> None:
    op.drop_constraint(op.f("fk_leads_campaign_id_lead_campaigns"), "leads", type_="foreignkey")
    op.drop_index("ix_leads_org_updated_at", table_name="leads")
    op.drop_index("ix_leads_org_status_changed_at", table_name="leads")
    op.drop_index("ix_leads_org_pipeline_stage", table_name="leads")
    op.drop_index("ix_leads_org_phone_digits", table_name="leads")
    op.drop_index("ix_leads_org_campaign", table_name="leads")
    op.drop_index("ix_leads_org_assignee", table_name="leads")
    op.create_index(op.f("ix_leads_org_phone"), "leads", ["organization_id", "phone"], unique=False)
    op.drop_column("leads", "phone_digits")
    op.drop_index("ix_lead_tag_assignments_org_tag_lead", table_name="lead_tag_assignments")
    op.drop_table("lead_tag_assignments")
    op.drop_index("ix_lead_receipts_org_lead", table_name="lead_receipts")
    op.drop_table("lead_receipts")
    op.drop_index("uq_lead_pipeline_placements_lead_pipeline", table_name="lead_pipeline_placements")
    op.drop_index("ix_lead_pipeline_placements_org_pipeline_stage", table_name="lead_pipeline_placements")
    op.drop_table("lead_pipeline_placements")
    op.drop_table("minisite_events")
    op.drop_index("uq_lead_tags_org_category_name", table_name="lead_tags")
    op.drop_table("lead_tags")
    op.drop_index(
        "uq_lead_campaigns_org_channel_ref",
        table_name="lead_campaigns",
        postgresql_where=sa.text("external_ref IS NOT NULL"),
    )
    op.drop_table("lead_campaigns")
    op.drop_index("ix_rate_limit_counters_window_start", table_name="rate_limit_counters")
    op.drop_table("rate_limit_counters")
