"""The platform tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    DateTime,
    Index,
    Integer,
    Table,
    Text,
    Uuid,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.platform.db.columns import created_at_column, metadata

outbox = Table(
    "outbox",
    metadata,
    Column("id", Uuid, primary_key=True),  # the event id consumers deduplicate on
    Column("organization_id", Uuid, nullable=False),
    Column("type", Text, nullable=False),
    Column("aggregate_id", Uuid, nullable=False),
    Column("payload", JSONB, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Column("published_at", DateTime(timezone=True)),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("last_error", Text),
    Index("ix_outbox_unpublished", "occurred_at", postgresql_where=text("published_at IS NULL")),
)

idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    # scope names the operation and who may replay it, e.g. "leads.create:<org id>".
    Column("scope", Text, primary_key=True),
    Column("key", Text, primary_key=True),
    Column("request_hash", Text, nullable=False),
    Column("response_status", Integer, nullable=False),
    Column("response_body", JSONB, nullable=False),
    created_at_column(),
    Index("ix_idempotency_keys_created_at", "created_at"),
)
