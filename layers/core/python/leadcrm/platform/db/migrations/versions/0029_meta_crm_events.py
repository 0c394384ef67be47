"""Conversions API for CRM: per Meta connection settings and the log of CRM events sent to Meta.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-05

- meta_crm_settings: one row per Meta connection (dataset id, on/off, hashed contact allowed, stage → event
  name mapping).
- meta_crm_events: every CRM event built for a lead (unique on its event id, so a redelivered status change adds
  nothing), its status (pending → queued → sent / failed, or withdrawn) and Meta's answer.

Expand-only: two new tables.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meta_crm_settings",
        sa.Column("connection_id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("send_hashed_contact", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("stage_event_names", JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("updated_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["connection_id"],
            ["integration_connections.id"],
            name=op.f("fk_meta_crm_settings_connection_id_integration_connections"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_meta_crm_settings_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["updated_by_user_id"],
            ["users.id"],
            name=op.f("fk_meta_crm_settings_updated_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("connection_id", name=op.f("pk_meta_crm_settings")),
    )
    op.create_index(op.f("ix_meta_crm_settings_org"), "meta_crm_settings", ["organization_id"])
    op.create_table(
        "meta_crm_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("connection_id", sa.Uuid(), nullable=True),
        sa.Column("event_id", sa.Text(), nullable=False),
        sa.Column("source_event_id", sa.Uuid(), nullable=False),
        sa.Column("event_name", sa.Text(), nullable=False),
        sa.Column("event_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dataset_id", sa.Text(), nullable=False),
        sa.Column("page_id", sa.Text(), nullable=False),
        sa.Column("payload", JSONB(), nullable=False),
        sa.Column("status", sa.Text(), server_default="pending", nullable=False),
        sa.Column("withdrawn_reason", sa.Text(), nullable=True),
        sa.Column("answer", JSONB(), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'queued', 'sent', 'failed', 'withdrawn')", name=op.f("ck_meta_crm_events_status")
        ),
        sa.ForeignKeyConstraint(
            ["connection_id"],
            ["integration_connections.id"],
            name=op.f("fk_meta_crm_events_connection_id_integration_connections"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_meta_crm_events_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_meta_crm_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_meta_crm_events")),
    )
    op.create_index(op.f("uq_meta_crm_events_event_id"), "meta_crm_events", ["event_id"], unique=True)
    op.create_index(
        op.f("ix_meta_crm_events_org_lead"), "meta_crm_events", ["organization_id", "lead_id", "created_at"]
    )
    op.create_index(op.f("ix_meta_crm_events_lead"), "meta_crm_events", ["lead_id"])


def downgrade() -> None:
    op.drop_table("meta_crm_events")
    op.drop_table("meta_crm_settings")
