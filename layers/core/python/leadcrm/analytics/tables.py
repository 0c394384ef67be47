"""The analytics tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    Date,
    ForeignKey,
    Index,
    Numeric,
    String,
    Table,
    Text,
    Uuid,
)

from leadcrm.platform.db.columns import created_at_column, id_column, metadata, org_column, updated_at_column

# What a campaign cost over a period of the organization's days (both ends included). One currency per
# organization (analytics.attribution enforces it) and no two entries of a campaign overlap, so a period's
# spend is never counted twice.
campaign_spend = Table(
    "campaign_spend",
    metadata,
    id_column(),
    org_column(),
    Column("campaign_id", Uuid, ForeignKey("lead_campaigns.id", ondelete="CASCADE"), nullable=False),
    Column("period_start", Date, nullable=False),
    Column("period_end", Date, nullable=False),
    Column("amount", Numeric(14, 2), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("note", Text),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    created_at_column(),
    updated_at_column(),
    CheckConstraint("period_end >= period_start", name="period_order"),
    CheckConstraint("amount >= 0", name="amount_not_negative"),
    Index("ix_campaign_spend_org_campaign_period", "organization_id", "campaign_id", "period_start"),
    Index("ix_campaign_spend_org_period", "organization_id", "period_start", "period_end"),
)
