"""The qualification tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    Table,
    Text,
    Uuid,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.leads.tables import leads  # noqa: F401  (the foreign keys below name it)
from leadcrm.platform.db.columns import created_at_column, id_column, metadata, one_of, org_column, stamp_column

ENRICHMENT_CATEGORIES = ("firmographic", "demographic", "behavioral")

# What staff or an integration learned about a lead, one row per field and time it was learned (the newest
# row of a field is its value). Kept apart from the lead's own columns: what the lead sent is never
# overwritten by an enrichment.
lead_enrichments = Table(
    "lead_enrichments",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("category", Text, nullable=False),
    Column("field", Text, nullable=False),
    Column("value", JSONB, nullable=False),
    Column("source", Text, nullable=False),
    Column("confidence", Numeric(3, 2), nullable=False),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    created_at_column(),
    CheckConstraint(one_of("category", ENRICHMENT_CATEGORIES), name="category"),
    CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence_range"),
    Index("ix_lead_enrichments_org_lead_field", "organization_id", "lead_id", "field", "created_at"),
)

# An organization's scoring model, versioned: a change is a new row with the next version; the highest
# version is the one in force. The rescore job walks the organization's leads in id order after a change,
# remembering where it got to (rescore_after_lead_id) until it is done (rescored_at).
scoring_models = Table(
    "scoring_models",
    metadata,
    id_column(),
    org_column(),
    Column("version", Integer, nullable=False),
    Column("rules", JSONB, nullable=False),
    Column("qualify_threshold", Integer, nullable=False),
    Column("nurture_days", Integer, nullable=False),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    created_at_column(),
    Column("rescore_after_lead_id", Uuid),
    Column("rescored_at", DateTime(timezone=True)),
    CheckConstraint("version >= 1", name="version_positive"),
    CheckConstraint("nurture_days >= 1", name="nurture_days_positive"),
    Index("uq_scoring_models_org_version", "organization_id", "version", unique=True),
    Index("ix_scoring_models_rescore_pending", "created_at", postgresql_where=text("rescored_at IS NULL")),
)

# A merge of a duplicate into the survivor staff chose: who, when, and exactly what moved, so an undo within
# the window can put both leads back. The merged lead's row is deleted from `leads`; this row is its
# tombstone (merged_lead_id answers with survivor_lead_id). survivor_lead_id is a foreign key like any other,
# so when the survivor is itself merged later the tombstone moves on to the new survivor with the rest of its
# rows; original_survivor_id keeps who it was merged into.
lead_merges = Table(
    "lead_merges",
    metadata,
    id_column(),
    org_column(),
    Column("survivor_lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("original_survivor_id", Uuid, nullable=False),
    Column("merged_lead_id", Uuid, nullable=False),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    stamp_column("merged_at"),
    # {"table": {"column": ..., "pk": [...], "rows": [[pk values], ...]}}: the rows the merge moved, ids only.
    Column("moved", JSONB, nullable=False),
    # The survivor's own rows per table before the merge (ids only): an undo reports what arrived since.
    Column("survivor_rows", JSONB, nullable=False),
    # What an undo needs to rebuild (the merged lead's row, rows removed by a policy, the survivor's
    # values the merge filled). Personal data: dropped by the merge_snapshot_purge job once the undo window
    # has closed, by an undo, or when the survivor is pseudonymized.
    Column("snapshot", JSONB),
    Column("undone_at", DateTime(timezone=True)),
    Column("undone_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("undo_report", JSONB),
    Index("ix_lead_merges_org_survivor", "organization_id", "survivor_lead_id", "merged_at"),
    # The snapshot purge job: merges whose undo snapshot is still kept, oldest first.
    Index("ix_lead_merges_snapshot_kept", "merged_at", postgresql_where=text("snapshot IS NOT NULL")),
    Index(
        "uq_lead_merges_live_tombstone",
        "organization_id",
        "merged_lead_id",
        unique=True,
        postgresql_where=text("undone_at IS NULL"),
    ),
)
