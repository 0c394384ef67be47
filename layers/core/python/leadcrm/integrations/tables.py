"""The outbound webhook tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from leadcrm.platform.db.columns import created_at_column, id_column, metadata, one_of, org_column, updated_at_column

DELIVERY_STATUSES = ("pending", "succeeded", "failed")

# An organization's endpoint: where, which event types, its signing secret (shown once, at create and
# rotation), whether it asked for the lead's contact, and whether it is enabled (and why not).
webhook_subscriptions = Table(
    "webhook_subscriptions",
    metadata,
    id_column(),
    org_column(),
    Column("url", Text, nullable=False),
    Column("event_types", ARRAY(Text), nullable=False),
    Column("secret", Text, nullable=False),
    Column("include_personal_data", Boolean, nullable=False, server_default="false"),
    Column("enabled", Boolean, nullable=False, server_default="true"),
    Column("disabled_reason", Text),
    Column("disabled_at", DateTime(timezone=True)),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    created_at_column(),
    updated_at_column(),
    Index("ix_webhook_subscriptions_org", "organization_id", "created_at", "id"),
)

# One event to one endpoint: its id is the `webhook-id` every attempt and replay carries. The body is not
# kept (it may carry PII): `payload` holds the event's ids-only data, and the body is built at each send.
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    id_column(),
    org_column(),
    Column("subscription_id", Uuid, ForeignKey("webhook_subscriptions.id", ondelete="CASCADE"), nullable=False),
    Column("event_id", Uuid, nullable=False),
    Column("event_type", Text, nullable=False),
    Column("payload", JSONB, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("first_attempt_at", DateTime(timezone=True)),
    Column("last_attempt_at", DateTime(timezone=True)),
    Column("next_attempt_at", DateTime(timezone=True)),
    Column("response_code", Integer),
    Column("latency_ms", Integer),
    Column("last_error", Text),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", DELIVERY_STATUSES), name="status"),
    # A redelivered event makes no second delivery (lead.converted has its own type, so the pair is per type).
    UniqueConstraint("subscription_id", "event_id", "event_type"),
    Index("ix_webhook_deliveries_subscription", "subscription_id", "created_at", "id"),
    Index("ix_webhook_deliveries_due", "next_attempt_at", postgresql_where="status = 'pending'"),
)
