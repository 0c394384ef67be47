"""analytics: Attribution touch log, campaign spend and response metrics (issue 9).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29

`lead_touches` gets a first touch for every existing lead (its acquisition, read from the lead's source and
campaign at its creation time, as leads.rules.touches.acquisition_channel decides for new leads), so every
lead has exactly one. `ix_leads_org_created_at_analytics` lets the analytics read a period of an
organization's real leads from the index alone; `ix_lead_status_events_lead` is rebuilt to cover the
status history's columns the funnel reads.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# Copied, not imported: a migration must keep meaning what it meant when it was written.
TOUCH_KINDS = ("form", "ad", "whatsapp_referral", "email_reply", "message", "utm", "staff", "import", "other")
BACKFILL_FIRST_TOUCHES = """
INSERT INTO lead_touches (id, organization_id, lead_id, kind, channel, is_first, occurred_at, campaign_id, detail)
SELECT gen_random_uuid(), l.organization_id, l.id,
       CASE l.source WHEN 'minisite' THEN 'form' WHEN 'facebook' THEN 'ad' WHEN 'instagram' THEN 'ad'
                     WHEN 'whatsapp' THEN 'whatsapp_referral' WHEN 'email' THEN 'message'
                     WHEN 'manual' THEN 'staff' WHEN 'import' THEN 'import' ELSE 'other' END,
       CASE WHEN l.source IN ('facebook', 'instagram', 'whatsapp', 'email', 'referral', 'walk_in')
                 OR l.campaign_id IS NOT NULL THEN l.source
            ELSE 'direct_unknown' END,
       true, l.created_at, l.campaign_id, '{"backfilled": true}'::jsonb
FROM leads l
"""


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def upgrade() -> None:
    op.create_table(
        "lead_touches",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("is_first", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("campaign_id", sa.Uuid(), nullable=True),
        sa.Column("utm_source", sa.Text(), nullable=True),
        sa.Column("utm_medium", sa.Text(), nullable=True),
        sa.Column("utm_campaign", sa.Text(), nullable=True),
        sa.Column("utm_term", sa.Text(), nullable=True),
        sa.Column("utm_content", sa.Text(), nullable=True),
        sa.Column(
            "detail", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("source_event_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(_in("kind", TOUCH_KINDS), name=op.f("ck_lead_touches_kind")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_touches_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_touches_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["lead_campaigns.id"],
            name=op.f("fk_lead_touches_campaign_id_lead_campaigns"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_touches")),
    )
    op.create_index(
        "ix_lead_touches_org_lead_occurred_at",
        "lead_touches",
        ["organization_id", "lead_id", "occurred_at"],
        postgresql_include=["is_first", "campaign_id"],
    )
    op.create_index(
        "uq_lead_touches_org_lead_first",
        "lead_touches",
        ["organization_id", "lead_id"],
        unique=True,
        postgresql_include=["occurred_at", "campaign_id", "channel"],
        postgresql_where=sa.text("is_first"),
    )
    op.create_index(
        "uq_lead_touches_org_source_event",
        "lead_touches",
        ["organization_id", "source_event_id"],
        unique=True,
        postgresql_where=sa.text("source_event_id IS NOT NULL"),
    )
    op.execute(BACKFILL_FIRST_TOUCHES)

    op.create_table(
        "campaign_spend",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("campaign_id", sa.Uuid(), nullable=False),
        sa.Column("period_start", sa.Date(), nullable=False),
        sa.Column("period_end", sa.Date(), nullable=False),
        sa.Column("amount", sa.Numeric(14, 2), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("period_end >= period_start", name=op.f("ck_campaign_spend_period_order")),
        sa.CheckConstraint("amount >= 0", name=op.f("ck_campaign_spend_amount_not_negative")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_campaign_spend_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["lead_campaigns.id"],
            name=op.f("fk_campaign_spend_campaign_id_lead_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"],
            ["users.id"],
            name=op.f("fk_campaign_spend_created_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaign_spend")),
    )
    op.create_index(
        "ix_campaign_spend_org_campaign_period", "campaign_spend", ["organization_id", "campaign_id", "period_start"]
    )
    op.create_index("ix_campaign_spend_org_period", "campaign_spend", ["organization_id", "period_start", "period_end"])

    op.create_index(
        "ix_leads_org_created_at_analytics",
        "leads",
        ["organization_id", "created_at"],
        postgresql_include=["id", "status", "source", "campaign_id", "first_human_response_at"],
        postgresql_where=sa.text("NOT is_test"),
    )
    op.create_index("ix_leads_org_test", "leads", ["organization_id"], postgresql_where=sa.text("is_test"))
    # The status history's index now covers what the funnel and time in stage read, in the order they read it.
    op.drop_index("ix_lead_status_events_lead", table_name="lead_status_events")
    op.create_index(
        "ix_lead_status_events_lead",
        "lead_status_events",
        ["organization_id", "lead_id", "changed_at", "id"],
        postgresql_include=["to_status", "to_stage_id"],
    )
    op.create_index(
        "ix_lead_status_events_org_won",
        "lead_status_events",
        ["organization_id", "lead_id"],
        postgresql_include=["changed_at"],
        postgresql_where=sa.text("to_status IN ('converted', 'customer')"),
    )


def downgrade() -> None:
    op.drop_index("ix_lead_status_events_org_won", table_name="lead_status_events")
    op.drop_index("ix_lead_status_events_lead", table_name="lead_status_events")
    op.create_index("ix_lead_status_events_lead", "lead_status_events", ["organization_id", "lead_id", "changed_at"])
    op.drop_index("ix_leads_org_test", table_name="leads")
    op.drop_index("ix_leads_org_created_at_analytics", table_name="leads")
    op.drop_index("ix_campaign_spend_org_period", table_name="campaign_spend")
    op.drop_index("ix_campaign_spend_org_campaign_period", table_name="campaign_spend")
    op.drop_table("campaign_spend")
    op.drop_index("uq_lead_touches_org_source_event", table_name="lead_touches")
    op.drop_index("uq_lead_touches_org_lead_first", table_name="lead_touches")
    op.drop_index("ix_lead_touches_org_lead_occurred_at", table_name="lead_touches")
    op.drop_table("lead_touches")
