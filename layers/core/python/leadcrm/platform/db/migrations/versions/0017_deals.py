"""deals: Deals, deal pipelines and owner departure (issue 11).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29

New tables only, plus one nullable column on organizations (a catalog change, no rewrite). A closed-won deal
is sealed in the database too: a trigger refuses any change of its state, stage, value, currency, dates or
terms (the service refuses first with 409 DEAL_SEALED; the trigger keeps every other writer honest). Only
the person links (lead, membership: SET NULL when a lead is erased), the owner (SET NULL when a user is
removed), the free text an erase forgets (title, offer reference, closure reason) and updated_at may still
change.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import Text

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# Copied, not imported: a migration must keep meaning what it meant when it was written.
SEALED_COLUMNS = (
    "status",
    "stage_id",
    "pipeline_id",
    "value_minor",
    "currency",
    "closed_at",
    "expected_close_date",
    "offer_type",
    "probability",
    "forecast_category",
    "version",
)
SEAL_FUNCTION = f"""
CREATE FUNCTION leadcrm_deal_sealed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF ({", ".join("NEW." + c for c in SEALED_COLUMNS)})
       IS DISTINCT FROM ({", ".join("OLD." + c for c in SEALED_COLUMNS)}) THEN
        RAISE EXCEPTION 'deal % is closed-won and sealed', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$
"""
SEAL_TRIGGER = (
    "CREATE TRIGGER deals_sealed_when_won BEFORE UPDATE ON deals "
    "FOR EACH ROW WHEN (OLD.status = 'won') EXECUTE FUNCTION leadcrm_deal_sealed()"
)


def upgrade() -> None:
    op.create_table(
        "deal_pipelines",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("is_default", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_deal_pipelines_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deal_pipelines")),
    )
    op.create_index(
        "uq_deal_pipelines_one_default",
        "deal_pipelines",
        ["organization_id"],
        unique=True,
        postgresql_where=sa.text("is_default"),
    )
    op.create_table(
        "deal_stages",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("pipeline_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("probability", sa.Integer(), nullable=False),
        sa.Column("forecast_category", sa.Text(), nullable=False),
        sa.Column("rotting_days", sa.Integer(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "forecast_category IN ('pipeline', 'best_case', 'commit', 'closed')",
            name=op.f("ck_deal_stages_forecast_category"),
        ),
        sa.CheckConstraint(
            "kind IN ('new', 'discovery', 'proposal', 'negotiation', 'won', 'lost')", name=op.f("ck_deal_stages_kind")
        ),
        sa.CheckConstraint("position >= 0", name=op.f("ck_deal_stages_position_not_negative")),
        sa.CheckConstraint("probability BETWEEN 0 AND 100", name=op.f("ck_deal_stages_probability_range")),
        sa.CheckConstraint(
            "rotting_days IS NULL OR rotting_days BETWEEN 1 AND 365", name=op.f("ck_deal_stages_rotting_days_range")
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_deal_stages_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["pipeline_id"],
            ["deal_pipelines.id"],
            name=op.f("fk_deal_stages_pipeline_id_deal_pipelines"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deal_stages")),
    )
    op.create_index(
        "ix_deal_stages_org_pipeline_position",
        "deal_stages",
        ["organization_id", "pipeline_id", "position"],
        unique=False,
    )
    op.create_table(
        "ownership_handovers",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("membership_id", sa.Uuid(), nullable=True),
        sa.Column("from_user_id", sa.Uuid(), nullable=True),
        sa.Column("to_user_id", sa.Uuid(), nullable=True),
        sa.Column("via", sa.Text(), nullable=False),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column("source_event_id", sa.Text(), nullable=True),
        sa.Column("deals_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("leads_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("tasks_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("via IN ('api', 'platform_event')", name=op.f("ck_ownership_handovers_via")),
        sa.ForeignKeyConstraint(
            ["actor_user_id"],
            ["users.id"],
            name=op.f("fk_ownership_handovers_actor_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["from_user_id"], ["users.id"], name=op.f("fk_ownership_handovers_from_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["membership_id"],
            ["memberships.id"],
            name=op.f("fk_ownership_handovers_membership_id_memberships"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ownership_handovers_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["to_user_id"], ["users.id"], name=op.f("fk_ownership_handovers_to_user_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ownership_handovers")),
    )
    op.create_index(
        "ix_ownership_handovers_org_created_at", "ownership_handovers", ["organization_id", "created_at"], unique=False
    )
    op.create_index(
        "uq_ownership_handovers_source_event",
        "ownership_handovers",
        ["source_event_id"],
        unique=True,
        postgresql_where=sa.text("source_event_id IS NOT NULL"),
    )
    op.create_table(
        "deals",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("pipeline_id", sa.Uuid(), nullable=False),
        sa.Column("stage_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.Text(), server_default="open", nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("offer_type", sa.Text(), nullable=False),
        sa.Column("offer_ref", sa.Text(), nullable=True),
        sa.Column("lead_id", sa.Uuid(), nullable=True),
        sa.Column("membership_id", sa.Uuid(), nullable=True),
        sa.Column("value_minor", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("expected_close_date", sa.Date(), nullable=False),
        sa.Column("probability", sa.Integer(), nullable=True),
        sa.Column("forecast_category", sa.Text(), nullable=True),
        sa.Column("owner_user_id", sa.Uuid(), nullable=True),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("version", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("last_activity_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("stage_entered_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("stalled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("close_reason", sa.Text(), nullable=True),
        sa.Column("loss_reason", sa.Text(), nullable=True),
        sa.Column("loss_note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "(status = 'stalled') = (stalled_at IS NOT NULL)", name=op.f("ck_deals_stalled_at_iff_stalled")
        ),
        sa.CheckConstraint(
            "(status IN ('won', 'lost')) = (closed_at IS NOT NULL)", name=op.f("ck_deals_closed_at_iff_closed")
        ),
        sa.CheckConstraint("currency ~ '^[A-Z]{3}$'", name=op.f("ck_deals_currency_code")),
        sa.CheckConstraint(
            "forecast_category IN ('pipeline', 'best_case', 'commit')", name=op.f("ck_deals_forecast_category")
        ),
        sa.CheckConstraint(
            "loss_reason IN ('price', 'competitor', 'no_budget', 'no_decision', 'timing', 'not_a_fit', 'unresponsive', 'other')",
            name=op.f("ck_deals_loss_reason"),
        ),
        sa.CheckConstraint("offer_type IN ('plan', 'package', 'course')", name=op.f("ck_deals_offer_type")),
        sa.CheckConstraint("status <> 'lost' OR loss_reason IS NOT NULL", name=op.f("ck_deals_lost_has_loss_reason")),
        sa.CheckConstraint("status <> 'won' OR close_reason IS NOT NULL", name=op.f("ck_deals_won_has_close_reason")),
        sa.CheckConstraint("status IN ('open', 'stalled', 'won', 'lost')", name=op.f("ck_deals_status")),
        sa.CheckConstraint(
            "probability IS NULL OR probability BETWEEN 0 AND 100", name=op.f("ck_deals_probability_range")
        ),
        sa.CheckConstraint("value_minor >= 0", name=op.f("ck_deals_value_not_negative")),
        sa.CheckConstraint("version >= 1", name=op.f("ck_deals_version_positive")),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"], ["users.id"], name=op.f("fk_deals_created_by_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(["lead_id"], ["leads.id"], name=op.f("fk_deals_lead_id_leads"), ondelete="SET NULL"),
        sa.ForeignKeyConstraint(
            ["membership_id"], ["memberships.id"], name=op.f("fk_deals_membership_id_memberships"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_deals_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["owner_user_id"], ["users.id"], name=op.f("fk_deals_owner_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["pipeline_id"], ["deal_pipelines.id"], name=op.f("fk_deals_pipeline_id_deal_pipelines")
        ),
        sa.ForeignKeyConstraint(["stage_id"], ["deal_stages.id"], name=op.f("fk_deals_stage_id_deal_stages")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deals")),
    )
    op.create_index(
        "ix_deals_open_last_activity",
        "deals",
        ["last_activity_at"],
        unique=False,
        postgresql_where=sa.text("status = 'open'"),
    )
    op.create_index(
        "ix_deals_org_closed_at",
        "deals",
        ["organization_id", "closed_at"],
        unique=False,
        postgresql_where=sa.text("closed_at IS NOT NULL"),
    )
    op.create_index("ix_deals_org_created_at", "deals", ["organization_id", "created_at", "id"], unique=False)
    op.create_index("ix_deals_org_expected_close", "deals", ["organization_id", "expected_close_date"], unique=False)
    op.create_index("ix_deals_org_lead", "deals", ["organization_id", "lead_id"], unique=False)
    op.create_index("ix_deals_org_membership", "deals", ["organization_id", "membership_id"], unique=False)
    op.create_index("ix_deals_org_owner_status", "deals", ["organization_id", "owner_user_id", "status"], unique=False)
    op.create_index("ix_deals_org_stage", "deals", ["organization_id", "stage_id"], unique=False)
    op.create_table(
        "deal_compensations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("deal_id", sa.Uuid(), nullable=False),
        sa.Column("amount_minor", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("document_ref", sa.Text(), nullable=True),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("amount_minor <> 0", name=op.f("ck_deal_compensations_amount_not_zero")),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"],
            ["users.id"],
            name=op.f("fk_deal_compensations_created_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["deal_id"], ["deals.id"], name=op.f("fk_deal_compensations_deal_id_deals"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_deal_compensations_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deal_compensations")),
    )
    op.create_index(
        "ix_deal_compensations_org_deal",
        "deal_compensations",
        ["organization_id", "deal_id", "created_at"],
        unique=False,
    )
    op.create_table(
        "deal_history",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("deal_id", sa.Uuid(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("from_stage_id", sa.Uuid(), nullable=True),
        sa.Column("to_stage_id", sa.Uuid(), nullable=True),
        sa.Column("from_status", sa.Text(), nullable=True),
        sa.Column("to_status", sa.Text(), nullable=True),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column(
            "payload", postgresql.JSONB(astext_type=Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("occurred_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["actor_user_id"], ["users.id"], name=op.f("fk_deal_history_actor_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["deal_id"], ["deals.id"], name=op.f("fk_deal_history_deal_id_deals"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_deal_history_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deal_history")),
    )
    op.create_index(
        "ix_deal_history_org_deal", "deal_history", ["organization_id", "deal_id", "occurred_at"], unique=False
    )
    op.add_column("tasks", sa.Column("linked_deal_id", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        op.f("fk_tasks_linked_deal_id_deals"), "tasks", "deals", ["linked_deal_id"], ["id"], ondelete="SET NULL"
    )
    op.add_column("organizations", sa.Column("default_assignee_user_id", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        op.f("fk_organizations_default_assignee_user_id_users"),
        "organizations",
        "users",
        ["default_assignee_user_id"],
        ["id"],
        ondelete="SET NULL",
    )

    op.execute(SEAL_FUNCTION)
    op.execute(SEAL_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER deals_sealed_when_won ON deals")
    op.execute("DROP FUNCTION leadcrm_deal_sealed()")
    op.drop_constraint(op.f("fk_organizations_default_assignee_user_id_users"), "organizations", type_="foreignkey")
    op.drop_column("organizations", "default_assignee_user_id")
    op.drop_constraint(op.f("fk_tasks_linked_deal_id_deals"), "tasks", type_="foreignkey")
    op.drop_column("tasks", "linked_deal_id")
    op.drop_index("ix_deal_history_org_deal", table_name="deal_history")
    op.drop_table("deal_history")
    op.drop_index("ix_deal_compensations_org_deal", table_name="deal_compensations")
    op.drop_table("deal_compensations")
    op.drop_index("ix_deals_org_stage", table_name="deals")
    op.drop_index("ix_deals_org_owner_status", table_name="deals")
    op.drop_index("ix_deals_org_membership", table_name="deals")
    op.drop_index("ix_deals_org_lead", table_name="deals")
    op.drop_index("ix_deals_org_expected_close", table_name="deals")
    op.drop_index("ix_deals_org_created_at", table_name="deals")
    op.drop_index("ix_deals_org_closed_at", table_name="deals", postgresql_where=sa.text("closed_at IS NOT NULL"))
    op.drop_index("ix_deals_open_last_activity", table_name="deals", postgresql_where=sa.text("status = 'open'"))
    op.drop_table("deals")
    op.drop_index(
        "uq_ownership_handovers_source_event",
        table_name="ownership_handovers",
        postgresql_where=sa.text("source_event_id IS NOT NULL"),
    )
    op.drop_index("ix_ownership_handovers_org_created_at", table_name="ownership_handovers")
    op.drop_table("ownership_handovers")
    op.drop_index("ix_deal_stages_org_pipeline_position", table_name="deal_stages")
    op.drop_table("deal_stages")
    op.drop_index("uq_deal_pipelines_one_default", table_name="deal_pipelines", postgresql_where=sa.text("is_default"))
    op.drop_table("deal_pipelines")
