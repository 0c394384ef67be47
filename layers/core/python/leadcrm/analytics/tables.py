"""The analytics tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    ARRAY,
    BigInteger,
    CheckConstraint,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    Numeric,
    SmallInteger,
    String,
    Table,
    Text,
    Uuid,
    text,
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


# -- rollups (migration 0023): the database's statement triggers queue the leads each write touched
# (analytics_pending_batches, migrations 0032 and 0033) and analytics.rollup_queue folds them into the
# rollups; read by the funnel and the attribution report; rebuilt from the source rows by analytics.jobs.
# The daily tables are created WITH (fillfactor = 70) there (their upserts stay HOT updates).

# One row per real lead: its local day of creation, furthest funnel rank, first touch and first win.
analytics_lead_facts = Table(
    "analytics_lead_facts",
    metadata,
    Column("lead_id", Uuid, primary_key=True),
    Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    Column("day", Date, nullable=False),
    Column("slot", SmallInteger, nullable=False),
    Column("furthest", SmallInteger),
    Column("acquired_at", DateTime(timezone=True)),
    Column("campaign_id", Uuid),
    Column("channel", Text),
    Column("won_at", DateTime(timezone=True)),
    # The lead's last status event (migration 0025): what the next appended events take the difference from.
    Column("last_event_at", DateTime(timezone=True)),
    Column("last_event_id", Uuid),
    Column("last_stage_id", Uuid),
    Index(
        "ix_analytics_lead_facts_org_day_won",
        "organization_id",
        "day",
        postgresql_include=["acquired_at", "won_at", "campaign_id", "channel"],
        postgresql_where=text("won_at IS NOT NULL AND acquired_at IS NOT NULL"),
    ),
)

analytics_lead_stage_facts = Table(
    "analytics_lead_stage_facts",
    metadata,
    Column("lead_id", Uuid, primary_key=True),
    Column("stage_id", Uuid, primary_key=True),
    Column("completed", Integer, nullable=False),
    Column("seconds", Numeric, nullable=False),
    Column("current", Integer, nullable=False),
)

analytics_daily_funnel = Table(
    "analytics_daily_funnel",
    metadata,
    Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
    Column("day", Date, primary_key=True),
    Column("furthest", SmallInteger, primary_key=True),
    Column("slot", SmallInteger, primary_key=True),
    Column("leads", BigInteger, nullable=False),
)

analytics_daily_stages = Table(
    "analytics_daily_stages",
    metadata,
    Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
    Column("day", Date, primary_key=True),
    Column("stage_id", Uuid, primary_key=True),
    Column("slot", SmallInteger, primary_key=True),
    Column("completed", BigInteger, nullable=False),
    Column("seconds", Numeric, nullable=False),
    Column("current", BigInteger, nullable=False),
)

analytics_daily_acquired = Table(
    "analytics_daily_acquired",
    metadata,
    Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    Column("day", Date, nullable=False),
    Column("campaign_id", Uuid),
    Column("channel", Text, nullable=False),
    Column("slot", SmallInteger, nullable=False),
    Column("leads", BigInteger, nullable=False),
    Index(
        "uq_analytics_daily_acquired",
        "organization_id",
        "day",
        "campaign_id",
        "channel",
        "slot",
        unique=True,
        postgresql_nulls_not_distinct=True,
    ),
)

# The leads written since their facts were last folded into the rollups (migrations 0032, 0033): one row per
# writing statement and organization, queued by the triggers, taken (deleted) and refreshed by
# analytics.rollup_queue.
analytics_pending_batches = Table(
    "analytics_pending_batches",
    metadata,
    Column("organization_id", Uuid, primary_key=True),
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("lead_ids", ARRAY(Uuid), nullable=False),
    Column("queued_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
)
