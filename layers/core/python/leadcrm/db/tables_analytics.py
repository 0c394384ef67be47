"""Attribution touch log, campaign spend and response metrics (issue 9)."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Numeric,
    String,
    Table,
    Text,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.db.columns import created_at_column, id_column, metadata, one_of, org_column, updated_at_column

# What brought a touch (domain.attribution.TouchKind).
TOUCH_KINDS = ("form", "ad", "whatsapp_referral", "email_reply", "message", "utm", "staff", "import", "other")

# A lead's marketing touches: the first one is its acquisition (is_first, exactly one per lead, written with
# the lead and changed only by an audited staff correction); every later one is appended, never updated.
lead_touches = Table(
    "lead_touches",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("kind", Text, nullable=False),
    # The acquisition channel the touch counts for ('facebook', 'minisite', 'direct_unknown', …).
    Column("channel", Text, nullable=False),
    Column("is_first", Boolean, nullable=False, server_default=text("false")),
    Column("occurred_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("campaign_id", Uuid, ForeignKey("lead_campaigns.id", ondelete="SET NULL")),
    Column("utm_source", Text),
    Column("utm_medium", Text),
    Column("utm_campaign", Text),
    Column("utm_term", Text),
    Column("utm_content", Text),
    # Ids only (receipt, conversation, message, event): never what the person wrote.
    Column("detail", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    # The event that caused the touch, when a consumer wrote it: a redelivery appends nothing.
    Column("source_event_id", Uuid),
    created_at_column(),
    CheckConstraint(one_of("kind", TOUCH_KINDS), name="kind"),
    # A lead's touch log, and a customer's path (covering what the attribution report reads).
    Index(
        "ix_lead_touches_org_lead_occurred_at",
        "organization_id",
        "lead_id",
        "occurred_at",
        postgresql_include=["is_first", "campaign_id"],
    ),
    # One first touch per lead; the attribution report reads a period's leads' acquisitions from it alone.
    Index(
        "uq_lead_touches_org_lead_first",
        "organization_id",
        "lead_id",
        unique=True,
        postgresql_include=["occurred_at", "campaign_id", "channel"],
        postgresql_where=text("is_first"),
    ),
    Index(
        "uq_lead_touches_org_source_event",
        "organization_id",
        "source_event_id",
        unique=True,
        postgresql_where=text("source_event_id IS NOT NULL"),
    ),
)

# What a campaign cost over a period of the organization's days (both ends included). One currency per
# organization (services.attribution enforces it) and no two entries of a campaign overlap, so a period's
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
