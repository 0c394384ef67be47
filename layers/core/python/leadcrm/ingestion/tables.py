"""The ingestion tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
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

PROVIDERS = ("meta_lead_ads", "whatsapp_cloud")

CONNECTION_STATUSES = ("active", "disconnected")

ATTRIBUTION_CHANNELS = ("meta_lead_ads", "whatsapp")

INGESTED_OUTCOMES = ("created", "reopened", "duplicate")

IMPORT_STATUSES = ("awaiting_upload", "queued", "running", "completed", "failed")

IMPORT_ROW_OUTCOMES = ("created", "duplicate", "invalid")

# An organization's link to a Meta Page (Lead Ads) or a WhatsApp Cloud phone number. Inbound webhooks name
# only the external account (page_id / phone_number_id); the active connection says whose event it is. The
# access token lives in Secrets Manager (one secret per connection); this row keeps only the secret's ARN.
integration_connections = Table(
    "integration_connections",
    metadata,
    id_column(),
    org_column(),
    Column("provider", Text, nullable=False),
    Column("external_account_id", Text, nullable=False),
    Column("display_name", Text),
    Column("secret_arn", Text),
    Column("status", Text, nullable=False, server_default="active"),
    Column("connected_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    stamp_column("connected_at"),
    Column("disconnected_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("provider", PROVIDERS), name="provider"),
    CheckConstraint(one_of("status", CONNECTION_STATUSES), name="status"),
    # One owner per external account at a time: an event can only ever route to one organization.
    Index(
        "uq_integration_connections_active_account",
        "provider",
        "external_account_id",
        unique=True,
        postgresql_where=text("status = 'active'"),
    ),
    Index("ix_integration_connections_org_provider", "organization_id", "provider", "created_at", "id"),
)

# The natural key of every webhook lead (leadgen_id, ctwa_clid or wamid), claimed in the transaction that
# writes the lead: a redelivery finds its claim and does nothing, a concurrent one waits on the key and
# then finds it. Kept after an erase (lead_id set null): an old redelivery must not bring the lead back.
ingested_events = Table(
    "ingested_events",
    metadata,
    Column("channel", Text, nullable=False),
    Column("external_ref", Text, nullable=False),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="SET NULL")),
    Column("outcome", Text, nullable=False),
    stamp_column("received_at"),
    PrimaryKeyConstraint("channel", "external_ref", name="pk_ingested_events"),
    CheckConstraint(one_of("channel", ATTRIBUTION_CHANNELS), name="channel"),
    CheckConstraint(one_of("outcome", INGESTED_OUTCOMES), name="outcome"),
    Index("ix_ingested_events_lead", "lead_id"),
)

# Which ad, ad set, form and campaign brought a lead (one row per webhook lead). Analytics reads it.
lead_attributions = Table(
    "lead_attributions",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("channel", Text, nullable=False),
    Column("platform", Text),
    Column("campaign_id", Uuid, ForeignKey("lead_campaigns.id", ondelete="SET NULL")),
    Column("external_campaign_id", Text),
    Column("external_campaign_name", Text),
    Column("adset_id", Text),
    Column("ad_id", Text),
    Column("form_id", Text),
    Column("external_ref", Text, nullable=False),
    created_at_column(),
    CheckConstraint(one_of("channel", ATTRIBUTION_CHANNELS), name="channel"),
    Index("uq_lead_attributions_channel_ref", "channel", "external_ref", unique=True),
    Index("ix_lead_attributions_org_lead", "organization_id", "lead_id"),
    # The ON DELETE CASCADE of an erased lead looks rows up by lead_id alone (0019).
    Index("ix_lead_attributions_lead", "lead_id"),
    Index("ix_lead_attributions_org_campaign", "organization_id", "campaign_id"),
)

# A CSV import: the file in S3, the column mapping, and the progress. `rows_processed` is the checkpoint:
# every chunk commits its leads, its report rows and the new checkpoint together, so a retried run resumes
# after the last committed row. `lease_*` keeps two runs of the same job from working at once.
lead_import_jobs = Table(
    "lead_import_jobs",
    metadata,
    id_column(),
    org_column(),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("status", Text, nullable=False, server_default="awaiting_upload"),
    Column("file_name", Text),
    Column("object_key", Text, nullable=False),
    Column("column_mapping", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    # The import option: the organization's assignment rules give the created leads owners (leads.assignment).
    Column("apply_assignment_rules", Boolean, nullable=False, server_default=text("false")),
    Column("rows_processed", Integer, nullable=False, server_default=text("0")),
    Column("created_count", Integer, nullable=False, server_default=text("0")),
    Column("duplicate_count", Integer, nullable=False, server_default=text("0")),
    Column("invalid_count", Integer, nullable=False, server_default=text("0")),
    Column("error_code", Text),
    Column("error_message", Text),
    Column("lease_owner", Text),
    Column("lease_until", DateTime(timezone=True)),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", IMPORT_STATUSES), name="status"),
    CheckConstraint("rows_processed >= 0", name="rows_processed_not_negative"),
    Index("ix_lead_import_jobs_org_created", "organization_id", "created_at", "id"),
)

# The per-row report: every data row's outcome (row 1 is the first row after the header). The lead ids are
# plain ids, not foreign keys: the report is history, and an erased lead's id simply answers 404 then.
lead_import_rows = Table(
    "lead_import_rows",
    metadata,
    Column("job_id", Uuid, ForeignKey("lead_import_jobs.id", ondelete="CASCADE"), nullable=False),
    Column("row_number", Integer, nullable=False),
    org_column(),
    Column("outcome", Text, nullable=False),
    Column("lead_id", Uuid),
    Column("existing_lead_id", Uuid),
    Column("errors", JSONB),
    PrimaryKeyConstraint("job_id", "row_number", name="pk_lead_import_rows"),
    CheckConstraint(one_of("outcome", IMPORT_ROW_OUTCOMES), name="outcome"),
    Index("ix_lead_import_rows_job_outcome", "job_id", "outcome", "row_number"),
)

# Conversions API for CRM (Meta's "Conversion Leads"): per Meta connection, where a lead's stage changes go
# (the Meta dataset), whether at all, what each stage is called there and whether hashed contact details may
# go with them. The token is the connection's own secret; nothing of it is kept here.
meta_crm_settings = Table(
    "meta_crm_settings",
    metadata,
    Column(
        "connection_id",
        Uuid,
        ForeignKey("integration_connections.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    org_column(),
    Column("dataset_id", Text, nullable=False),
    Column("enabled", Boolean, nullable=False, server_default=text("false")),
    Column("send_hashed_contact", Boolean, nullable=False, server_default=text("false")),
    # {stage id: event name}; a stage left out is sent under its own name
    Column("stage_event_names", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("updated_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    created_at_column(),
    updated_at_column(),
    Index("ix_meta_crm_settings_org", "organization_id"),
)

CRM_EVENT_STATUSES = ("pending", "queued", "sent", "failed", "withdrawn")

# Every CRM event built for a lead, once per status event (`event_id`, from the outbox event's id: a
# redelivered status change finds its row and adds nothing), with what was sent and Meta's answer. Deleted with
# the lead (erase) and on pseudonymization (the leadgen id and the hashes identify the person at Meta).
meta_crm_events = Table(
    "meta_crm_events",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("connection_id", Uuid, ForeignKey("integration_connections.id", ondelete="SET NULL")),
    Column("event_id", Text, nullable=False),
    Column("source_event_id", Uuid, nullable=False),
    Column("event_name", Text, nullable=False),
    Column("event_time", DateTime(timezone=True), nullable=False),
    Column("dataset_id", Text, nullable=False),
    Column("page_id", Text, nullable=False),
    Column("payload", JSONB, nullable=False),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("withdrawn_reason", Text),
    Column("answer", JSONB),
    Column("queued_at", DateTime(timezone=True)),
    Column("answered_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", CRM_EVENT_STATUSES), name="status"),
    Index("uq_meta_crm_events_event_id", "event_id", unique=True),
    Index("ix_meta_crm_events_org_lead", "organization_id", "lead_id", "created_at"),
    # The ON DELETE CASCADE of an erased lead looks rows up by lead_id alone.
    Index("ix_meta_crm_events_lead", "lead_id"),
)
