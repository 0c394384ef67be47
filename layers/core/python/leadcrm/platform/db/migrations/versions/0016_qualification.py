"""qualification: enrichments, versioned scoring models, merges with their tombstones, pseudonyms; score and
qualification columns on leads (issue 10)

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29

The new lead columns are nullable or have a constant default (catalog changes, no table rewrite).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# Copied, not imported: a migration must keep meaning what it meant when it was written.
QUALIFICATION_CHECK = "qualification_state IN ('scored', 'qualified', 'nurturing', 'disqualified')"


def upgrade() -> None:
    op.create_table(
        "scoring_models",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("rules", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("qualify_threshold", sa.Integer(), nullable=False),
        sa.Column("nurture_days", sa.Integer(), nullable=False),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("rescore_after_lead_id", sa.Uuid(), nullable=True),
        sa.Column("rescored_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("nurture_days >= 1", name=op.f("ck_scoring_models_nurture_days_positive")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_scoring_models_version_positive")),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"],
            ["users.id"],
            name=op.f("fk_scoring_models_created_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_scoring_models_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scoring_models")),
    )
    op.create_index(
        "ix_scoring_models_rescore_pending",
        "scoring_models",
        ["created_at"],
        unique=False,
        postgresql_where=sa.text("rescored_at IS NULL"),
    )
    op.create_index("uq_scoring_models_org_version", "scoring_models", ["organization_id", "version"], unique=True)
    op.create_table(
        "lead_enrichments",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("category", sa.Text(), nullable=False),
        sa.Column("field", sa.Text(), nullable=False),
        sa.Column("value", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Numeric(precision=3, scale=2), nullable=False),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "category IN ('firmographic', 'demographic', 'behavioral')", name=op.f("ck_lead_enrichments_category")
        ),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name=op.f("ck_lead_enrichments_confidence_range")),
        sa.ForeignKeyConstraint(
            ["actor_user_id"], ["users.id"], name=op.f("fk_lead_enrichments_actor_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_enrichments_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_enrichments_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_enrichments")),
    )
    op.create_index(
        "ix_lead_enrichments_org_lead_field",
        "lead_enrichments",
        ["organization_id", "lead_id", "field", "created_at"],
        unique=False,
    )
    op.create_table(
        "lead_merges",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("survivor_lead_id", sa.Uuid(), nullable=False),
        sa.Column("original_survivor_id", sa.Uuid(), nullable=False),
        sa.Column("merged_lead_id", sa.Uuid(), nullable=False),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column("merged_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("moved", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("survivor_rows", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("snapshot", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("undone_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("undone_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("undo_report", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.ForeignKeyConstraint(
            ["actor_user_id"], ["users.id"], name=op.f("fk_lead_merges_actor_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_merges_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["survivor_lead_id"], ["leads.id"], name=op.f("fk_lead_merges_survivor_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["undone_by_user_id"],
            ["users.id"],
            name=op.f("fk_lead_merges_undone_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_merges")),
    )
    op.create_index(
        "ix_lead_merges_org_survivor", "lead_merges", ["organization_id", "survivor_lead_id", "merged_at"], unique=False
    )
    op.create_index(
        "ix_lead_merges_snapshot_kept",
        "lead_merges",
        ["merged_at"],
        unique=False,
        postgresql_where=sa.text("snapshot IS NOT NULL"),
    )
    op.create_index(
        "uq_lead_merges_live_tombstone",
        "lead_merges",
        ["organization_id", "merged_lead_id"],
        unique=True,
        postgresql_where=sa.text("undone_at IS NULL"),
    )
    op.create_table(
        "lead_pseudonyms",
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("email_token", sa.Text(), nullable=True),
        sa.Column("phone_token", sa.Text(), nullable=True),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column("pseudonymized_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["actor_user_id"], ["users.id"], name=op.f("fk_lead_pseudonyms_actor_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_pseudonyms_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_pseudonyms_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("lead_id", name=op.f("pk_lead_pseudonyms")),
    )
    op.create_index(
        "ix_lead_pseudonyms_org_email_token", "lead_pseudonyms", ["organization_id", "email_token"], unique=False
    )
    op.create_index(
        "ix_lead_pseudonyms_org_phone_token", "lead_pseudonyms", ["organization_id", "phone_token"], unique=False
    )
    op.add_column("leads", sa.Column("score", sa.Integer(), nullable=True))
    op.add_column("leads", sa.Column("score_model_version", sa.Integer(), nullable=True))
    op.add_column("leads", sa.Column("scored_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("leads", sa.Column("qualification_state", sa.Text(), nullable=True))
    op.add_column("leads", sa.Column("qualification_reason", sa.Text(), nullable=True))
    op.add_column(
        "leads",
        sa.Column(
            "qualification_criteria",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
    )
    op.add_column("leads", sa.Column("qualification_changed_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("leads", sa.Column("reevaluate_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("leads", sa.Column("nurture_score", sa.Integer(), nullable=True))
    op.create_index(
        "ix_leads_nurture_due",
        "leads",
        ["reevaluate_at"],
        unique=False,
        postgresql_where=sa.text("qualification_state = 'nurturing'"),
    )
    # NOT VALID, then VALIDATE: the check is added without holding the table's exclusive lock for the scan.
    op.execute(f"ALTER TABLE leads ADD CONSTRAINT ck_leads_qualification_state CHECK ({QUALIFICATION_CHECK}) NOT VALID")
    op.execute("ALTER TABLE leads VALIDATE CONSTRAINT ck_leads_qualification_state")


def downgrade() -> None:
    op.execute("ALTER TABLE leads DROP CONSTRAINT ck_leads_qualification_state")
    op.drop_index(
        "ix_leads_nurture_due", table_name="leads", postgresql_where=sa.text("qualification_state = 'nurturing'")
    )
    op.drop_column("leads", "nurture_score")
    op.drop_column("leads", "reevaluate_at")
    op.drop_column("leads", "qualification_changed_at")
    op.drop_column("leads", "qualification_criteria")
    op.drop_column("leads", "qualification_reason")
    op.drop_column("leads", "qualification_state")
    op.drop_column("leads", "scored_at")
    op.drop_column("leads", "score_model_version")
    op.drop_column("leads", "score")
    op.drop_index("ix_lead_pseudonyms_org_phone_token", table_name="lead_pseudonyms")
    op.drop_index("ix_lead_pseudonyms_org_email_token", table_name="lead_pseudonyms")
    op.drop_table("lead_pseudonyms")
    op.drop_index(
        "uq_lead_merges_live_tombstone", table_name="lead_merges", postgresql_where=sa.text("undone_at IS NULL")
    )
    op.drop_index("ix_lead_merges_snapshot_kept", table_name="lead_merges")
    op.drop_index("ix_lead_merges_org_survivor", table_name="lead_merges")
    op.drop_table("lead_merges")
    op.drop_index("ix_lead_enrichments_org_lead_field", table_name="lead_enrichments")
    op.drop_table("lead_enrichments")
    op.drop_index("uq_scoring_models_org_version", table_name="scoring_models")
    op.drop_index(
        "ix_scoring_models_rescore_pending",
        table_name="scoring_models",
        postgresql_where=sa.text("rescored_at IS NULL"),
    )
    op.drop_table("scoring_models")
