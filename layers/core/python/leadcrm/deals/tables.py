"""The deals tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    Uuid,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.platform.db.columns import (
    created_at_column,
    id_column,
    metadata,
    one_of,
    org_column,
    stamp_column,
    updated_at_column,
)

DEAL_STAGE_KINDS = ("new", "discovery", "proposal", "negotiation", "won", "lost")

DEAL_STATUSES = ("open", "stalled", "won", "lost")

FORECAST_CATEGORIES = ("pipeline", "best_case", "commit", "closed")

OPEN_FORECAST_CATEGORIES = ("pipeline", "best_case", "commit")

OFFER_TYPES = ("plan", "package", "course")

LOSS_REASONS = ("price", "competitor", "no_budget", "no_decision", "timing", "not_a_fit", "unresponsive", "other")

HANDOVER_VIAS = ("api", "platform_event")

deal_pipelines = Table(
    "deal_pipelines",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text, nullable=False),
    Column("is_default", Boolean, nullable=False, server_default=text("true")),
    created_at_column(),
    updated_at_column(),
    # Race-safe lazy seeding: of two first requests only one inserts the organization's deal pipeline.
    Index("uq_deal_pipelines_one_default", "organization_id", unique=True, postgresql_where=text("is_default")),
)

deal_stages = Table(
    "deal_stages",
    metadata,
    id_column(),
    org_column(),
    Column("pipeline_id", Uuid, ForeignKey("deal_pipelines.id", ondelete="CASCADE"), nullable=False),
    Column("name", Text, nullable=False),
    # The state of spec section 5 the stage stands for (deals.rules.deals.StageKind); never edited.
    Column("kind", Text, nullable=False),
    # The stage's default win probability in whole percent; a deal may carry its own.
    Column("probability", Integer, nullable=False),
    Column("forecast_category", Text, nullable=False),
    # Idle days after which an open deal on this stage stalls (proposal and negotiation only); NULL: never.
    Column("rotting_days", Integer),
    Column("position", Integer, nullable=False),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("kind", DEAL_STAGE_KINDS), name="kind"),
    CheckConstraint(one_of("forecast_category", FORECAST_CATEGORIES), name="forecast_category"),
    CheckConstraint("probability BETWEEN 0 AND 100", name="probability_range"),
    CheckConstraint("rotting_days IS NULL OR rotting_days BETWEEN 1 AND 365", name="rotting_days_range"),
    CheckConstraint("position >= 0", name="position_not_negative"),
    Index("ix_deal_stages_org_pipeline_position", "organization_id", "pipeline_id", "position"),
)

deals = Table(
    "deals",
    metadata,
    id_column(),
    org_column(),
    Column("pipeline_id", Uuid, ForeignKey("deal_pipelines.id"), nullable=False),
    Column("stage_id", Uuid, ForeignKey("deal_stages.id"), nullable=False),
    Column("status", Text, nullable=False, server_default="open"),
    Column("title", Text, nullable=False),
    Column("offer_type", Text, nullable=False),
    # The platform's id of the plan, package or course, when the deal names one.
    Column("offer_ref", Text),
    # Who the deal is with: a lead, a member, or both (a converted lead). SET NULL: erasing a lead keeps the
    # deal's figures without the person (spec section 8: transactional history kept, not identifiable).
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="SET NULL")),
    Column("membership_id", Uuid, ForeignKey("memberships.id", ondelete="SET NULL")),
    Column("value_minor", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("expected_close_date", Date, nullable=False),
    # Per-deal overrides of the stage's defaults (NULL: the stage's).
    Column("probability", Integer),
    Column("forecast_category", Text),
    Column("owner_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # Optimistic concurrency: every change bumps it, and a change names the version it was made from.
    Column("version", Integer, nullable=False, server_default=text("1")),
    # The rotting clock: the last change a person made to the deal (the sweep compares it to the stage's days).
    stamp_column("last_activity_at"),
    stamp_column("stage_entered_at"),
    Column("stalled_at", DateTime(timezone=True)),
    # Set once when the deal closes; on a won deal it is sealed with the value (migration 0017's trigger).
    Column("closed_at", DateTime(timezone=True)),
    Column("close_reason", Text),
    Column("loss_reason", Text),
    Column("loss_note", Text),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", DEAL_STATUSES), name="status"),
    CheckConstraint(one_of("offer_type", OFFER_TYPES), name="offer_type"),
    CheckConstraint(one_of("forecast_category", OPEN_FORECAST_CATEGORIES), name="forecast_category"),
    CheckConstraint(one_of("loss_reason", LOSS_REASONS), name="loss_reason"),
    CheckConstraint("value_minor >= 0", name="value_not_negative"),
    CheckConstraint("currency ~ '^[A-Z]{3}$'", name="currency_code"),
    CheckConstraint("probability IS NULL OR probability BETWEEN 0 AND 100", name="probability_range"),
    CheckConstraint("version >= 1", name="version_positive"),
    CheckConstraint("(status IN ('won', 'lost')) = (closed_at IS NOT NULL)", name="closed_at_iff_closed"),
    CheckConstraint("status <> 'won' OR close_reason IS NOT NULL", name="won_has_close_reason"),
    CheckConstraint("status <> 'lost' OR loss_reason IS NOT NULL", name="lost_has_loss_reason"),
    CheckConstraint("(status = 'stalled') = (stalled_at IS NOT NULL)", name="stalled_at_iff_stalled"),
    # The list's default order pages on (created_at, id) within the organization.
    Index("ix_deals_org_created_at", "organization_id", "created_at", "id"),
    Index("ix_deals_org_owner_status", "organization_id", "owner_user_id", "status"),
    Index("ix_deals_org_lead", "organization_id", "lead_id"),
    Index("ix_deals_org_membership", "organization_id", "membership_id"),
    Index("ix_deals_org_stage", "organization_id", "stage_id"),
    Index("ix_deals_org_expected_close", "organization_id", "expected_close_date"),
    Index("ix_deals_org_closed_at", "organization_id", "closed_at", postgresql_where=text("closed_at IS NOT NULL")),
    # The rotting sweep: open deals by how long they have been idle, across organizations.
    Index("ix_deals_open_last_activity", "last_activity_at", postgresql_where=text("status = 'open'")),
)

# Every change of a deal, newest last: the deal's history (what the detail shows, and the audit trail).
deal_history = Table(
    "deal_history",
    metadata,
    id_column(),
    org_column(),
    Column("deal_id", Uuid, ForeignKey("deals.id", ondelete="CASCADE"), nullable=False),
    Column("type", Text, nullable=False),
    Column("from_stage_id", Uuid),
    Column("to_stage_id", Uuid),
    Column("from_status", Text),
    Column("to_status", Text),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("reason", Text),
    Column("payload", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    stamp_column("occurred_at"),
    Index("ix_deal_history_org_deal", "organization_id", "deal_id", "occurred_at"),
)

# Corrections of a closed-won deal: the sealed deal never changes; a signed amount is recorded beside it.
deal_compensations = Table(
    "deal_compensations",
    metadata,
    id_column(),
    org_column(),
    Column("deal_id", Uuid, ForeignKey("deals.id", ondelete="CASCADE"), nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("reason", Text, nullable=False),
    Column("document_ref", Text),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    created_at_column(),
    CheckConstraint("amount_minor <> 0", name="amount_not_zero"),
    Index("ix_deal_compensations_org_deal", "organization_id", "deal_id", "created_at"),
)

# Owner departure (spec section 8): one row per reassignment of a departed member's open work.
ownership_handovers = Table(
    "ownership_handovers",
    metadata,
    id_column(),
    org_column(),
    Column("membership_id", Uuid, ForeignKey("memberships.id", ondelete="SET NULL")),
    Column("from_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("to_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("via", Text, nullable=False),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # The platform event that caused it: a redelivery hands nothing over twice.
    Column("source_event_id", Text),
    Column("deals_count", Integer, nullable=False, server_default=text("0")),
    Column("leads_count", Integer, nullable=False, server_default=text("0")),
    Column("tasks_count", Integer, nullable=False, server_default=text("0")),
    created_at_column(),
    CheckConstraint(one_of("via", HANDOVER_VIAS), name="via"),
    Index("ix_ownership_handovers_org_created_at", "organization_id", "created_at"),
    Index(
        "uq_ownership_handovers_source_event",
        "source_event_id",
        unique=True,
        postgresql_where=text("source_event_id IS NOT NULL"),
    ),
)
