"""ingestion: Integration connections (Meta Lead Ads, WhatsApp Cloud), lead attribution, inbound event receipts and CSV import jobs (issue 6).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29

New tables only: nothing existing is rewritten or locked for long.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _now(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "integration_connections",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("external_account_id", sa.Text(), nullable=False),
        sa.Column("display_name", sa.Text(), nullable=True),
        sa.Column("secret_arn", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), server_default="active", nullable=False),
        sa.Column("connected_by_user_id", sa.Uuid(), nullable=True),
        _now("connected_at"),
        sa.Column("disconnected_at", sa.DateTime(timezone=True), nullable=True),
        _now("created_at"),
        _now("updated_at"),
        sa.CheckConstraint(
            "provider IN ('meta_lead_ads', 'whatsapp_cloud')", name=op.f("ck_integration_connections_provider")
        ),
        sa.CheckConstraint("status IN ('active', 'disconnected')", name=op.f("ck_integration_connections_status")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_integration_connections_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["connected_by_user_id"],
            ["users.id"],
            name=op.f("fk_integration_connections_connected_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_integration_connections")),
    )
    op.create_index(
        "uq_integration_connections_active_account",
        "integration_connections",
        ["provider", "external_account_id"],
        unique=True,
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_index(
        "ix_integration_connections_org_provider",
        "integration_connections",
        ["organization_id", "provider", "created_at", "id"],
    )

    op.create_table(
        "ingested_events",
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("external_ref", sa.Text(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=False),
        _now("received_at"),
        sa.CheckConstraint("channel IN ('meta_lead_ads', 'whatsapp')", name=op.f("ck_ingested_events_channel")),
        sa.CheckConstraint("outcome IN ('created', 'reopened', 'duplicate')", name=op.f("ck_ingested_events_outcome")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ingested_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_ingested_events_lead_id_leads"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("channel", "external_ref", name=op.f("pk_ingested_events")),
    )
    op.create_index("ix_ingested_events_lead", "ingested_events", ["lead_id"])

    op.create_table(
        "lead_attributions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("platform", sa.Text(), nullable=True),
        sa.Column("campaign_id", sa.Uuid(), nullable=True),
        sa.Column("external_campaign_id", sa.Text(), nullable=True),
        sa.Column("external_campaign_name", sa.Text(), nullable=True),
        sa.Column("adset_id", sa.Text(), nullable=True),
        sa.Column("ad_id", sa.Text(), nullable=True),
        sa.Column("form_id", sa.Text(), nullable=True),
        sa.Column("external_ref", sa.Text(), nullable=False),
        _now("created_at"),
        sa.CheckConstraint("channel IN ('meta_lead_ads', 'whatsapp')", name=op.f("ck_lead_attributions_channel")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_attributions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_attributions_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["lead_campaigns.id"],
            name=op.f("fk_lead_attributions_campaign_id_lead_campaigns"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_attributions")),
    )
    op.create_index("uq_lead_attributions_channel_ref", "lead_attributions", ["channel", "external_ref"], unique=True)
    op.create_index("ix_lead_attributions_org_lead", "lead_attributions", ["organization_id", "lead_id"])
    op.create_index("ix_lead_attributions_org_campaign", "lead_attributions", ["organization_id", "campaign_id"])

    op.create_table(
        "lead_import_jobs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("status", sa.Text(), server_default="awaiting_upload", nullable=False),
        sa.Column("file_name", sa.Text(), nullable=True),
        sa.Column("object_key", sa.Text(), nullable=False),
        sa.Column(
            "column_mapping",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("rows_processed", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("duplicate_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("invalid_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("error_code", sa.Text(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.Text(), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        _now("created_at"),
        _now("updated_at"),
        sa.CheckConstraint(
            "status IN ('awaiting_upload', 'queued', 'running', 'completed', 'failed')",
            name=op.f("ck_lead_import_jobs_status"),
        ),
        sa.CheckConstraint("rows_processed >= 0", name=op.f("ck_lead_import_jobs_rows_processed_not_negative")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_import_jobs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"],
            ["users.id"],
            name=op.f("fk_lead_import_jobs_created_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_import_jobs")),
    )
    op.create_index("ix_lead_import_jobs_org_created", "lead_import_jobs", ["organization_id", "created_at", "id"])

    op.create_table(
        "lead_import_rows",
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("row_number", sa.Integer(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=True),
        sa.Column("existing_lead_id", sa.Uuid(), nullable=True),
        sa.Column("errors", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.CheckConstraint("outcome IN ('created', 'duplicate', 'invalid')", name=op.f("ck_lead_import_rows_outcome")),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["lead_import_jobs.id"],
            name=op.f("fk_lead_import_rows_job_id_lead_import_jobs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_import_rows_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "row_number", name=op.f("pk_lead_import_rows")),
    )
    op.create_index("ix_lead_import_rows_job_outcome", "lead_import_rows", ["job_id", "outcome", "row_number"])


def downgrade() -> None:
    op.drop_table("lead_import_rows")
    op.drop_table("lead_import_jobs")
    op.drop_table("lead_attributions")
    op.drop_table("ingested_events")
    op.drop_table("integration_connections")
