"""The pipelines tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

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
    Uuid,
    text,
)

from leadcrm.platform.db.columns import created_at_column, id_column, metadata, one_of, org_column, updated_at_column

STAGE_CATEGORIES = (
    "new",
    "contacted",
    "callback",
    "trial_booked",
    "no_show",
    "converted",
    "customer",
    "lost",
    "frozen",
)

pipelines = Table(
    "pipelines",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text, nullable=False),
    Column("is_default", Boolean, nullable=False, server_default=text("false")),
    Column("archived_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    # Race-safe lazy seeding: concurrent first requests can make only one default pipeline.
    Index("uq_pipelines_one_default", "organization_id", unique=True, postgresql_where=text("is_default")),
    # Reopened leads of an archived pipeline go to the default one, so the default is never archived.
    CheckConstraint("NOT (is_default AND archived_at IS NOT NULL)", name="default_not_archived"),
)

pipeline_stages = Table(
    "pipeline_stages",
    metadata,
    id_column(),
    org_column(),
    Column("pipeline_id", Uuid, ForeignKey("pipelines.id", ondelete="CASCADE"), nullable=False),
    Column("name", Text, nullable=False),
    Column("category", Text, nullable=False),
    Column("position", Integer, nullable=False),
    Column("archived_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("category", STAGE_CATEGORIES), name="category"),
    CheckConstraint("position >= 0", name="position_not_negative"),
    Index("ix_pipeline_stages_pipeline_position", "organization_id", "pipeline_id", "position"),
)
