"""SQLAlchemy 2 table definitions. Every org-owned row carries organization_id, and every index a list
uses starts with it. Keys are UUIDv7 made in the application (leadcrm.ids.uuid7): no server default."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    Time,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.db.columns import created_at_column, id_column, metadata, one_of, org_column, updated_at_column

ROLES = ("owner", "admin", "coach", "member")
MEMBERSHIP_STATUSES = ("active", "pending_invitation", "cancelled", "suspended")
USER_KINDS = ("account", "managed")
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
TASK_STATUSES = ("pending", "in_progress", "completed", "cancelled")
TASK_PRIORITIES = ("low", "medium", "high")
TAG_CATEGORIES = ("label", "purchase")
QUALIFICATION_STATES = ("scored", "qualified", "nurturing", "disqualified")
# The entry points a closed lead came back through (leads.returned_via), see domain.returning.ReturnVia.
RETURN_VIAS = ("public_capture", "staff_create", "meta", "whatsapp", "join_released", "staff_reopen")

# The work queue's scope and reasons as SQL, shared by its partial indexes and by the queries that must
# repeat them word for word for PostgreSQL to prove an index applies (domain.attention states the rules).
QUEUE_SCOPE_SQL = (
    "archived_at IS NULL AND paused_at IS NULL "
    "AND status IN ('new', 'contacted', 'callback', 'trial_booked', 'no_show')"
)
UNTOUCHED_NEW_SQL = "status = 'new' AND last_contact_attempt_at IS NULL AND last_contacted_at IS NULL"
# A follow-up that is not the seeded intake call (due at created_at) nor the return call (due at returned_at).
REAL_FOLLOW_UP_SQL = (
    "next_action_at IS NOT NULL AND NOT (next_action_type IS NOT DISTINCT FROM 'call' "
    "AND (next_action_at = created_at OR next_action_at IS NOT DISTINCT FROM returned_at))"
)
INBOUND_UNANSWERED_SQL = (
    "last_inbound_at IS NOT NULL AND (last_outbound_at IS NULL OR last_outbound_at < last_inbound_at)"
)

organizations = Table(
    "organizations",
    metadata,
    id_column(),
    Column("name", Text, nullable=False),
    Column("timezone", Text, nullable=False, server_default="UTC"),
    Column("locale", Text, nullable=False, server_default="en"),
    Column("country_code", String(2)),
    Column("features", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("flags", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    # Who takes work nobody else is named for: a departed member's open deals, leads and tasks (services.
    # owner_departure) and unowned returning leads. NULL: the oldest active owner.
    Column("default_assignee_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    created_at_column(),
    updated_at_column(),
)

users = Table(
    "users",
    metadata,
    id_column(),
    Column("auth_subject", Text, unique=True),
    Column("email", Text),
    Column("first_name", Text),
    Column("last_name", Text),
    Column("phone", Text),
    Column("kind", Text, nullable=False, server_default="account"),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("kind", USER_KINDS), name="kind"),
    Index("ix_users_lower_email", func.lower(text("email"))),
    # One account per email (any case): convert finds-or-creates the user with INSERT … ON CONFLICT on it.
    # Managed users (children) share a parent's email, so they are outside it.
    Index(
        "uq_users_account_lower_email",
        func.lower(text("email")),
        unique=True,
        postgresql_where=text("kind = 'account' AND email IS NOT NULL"),
    ),
)

memberships = Table(
    "memberships",
    metadata,
    id_column(),
    org_column(),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("role", Text, nullable=False),
    Column("status", Text, nullable=False, server_default="active"),
    Column("source_lead_id", Uuid, ForeignKey("leads.id", ondelete="SET NULL", use_alter=True)),
    # The member's notification preferences, e.g. {"newMessage": {"email": false}}; a missing row or key
    # means enabled (conversations gate member email only on an explicit opt-out).
    Column("notification_prefs", JSONB),
    created_at_column(),
    updated_at_column(),
    Column("deleted_at", DateTime(timezone=True)),
    CheckConstraint(one_of("role", ROLES), name="role"),
    CheckConstraint(one_of("status", MEMBERSHIP_STATUSES), name="status"),
    # One live membership per user and organization; a soft-deleted one may be followed by a new one.
    Index(
        "uq_memberships_org_user_live",
        "organization_id",
        "user_id",
        unique=True,
        postgresql_where=text("deleted_at IS NULL"),
    ),
    Index("ix_memberships_user_id", "user_id"),
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

leads = Table(
    "leads",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text),
    Column("email", Text),
    Column("phone", Text),
    # Digits only, kept by PostgreSQL: dedup and search by phone ignore how it was typed ("050-123 4567").
    Column("phone_digits", Text, Computed("regexp_replace(coalesce(phone, ''), '[^0-9]', '', 'g')", persisted=True)),
    Column("locale", Text),
    Column("note", Text),
    Column("source", Text, nullable=False, server_default="manual"),
    Column("status", Text, nullable=False),
    Column("pipeline_id", Uuid, ForeignKey("pipelines.id"), nullable=False),
    Column("stage_id", Uuid, ForeignKey("pipeline_stages.id"), nullable=False),
    Column("campaign_id", Uuid, ForeignKey("lead_campaigns.id", ondelete="SET NULL")),
    Column("assigned_to_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("lost_reason", Text),
    Column("is_test", Boolean, nullable=False, server_default=text("false")),
    Column("archived_at", DateTime(timezone=True)),
    Column("converted_membership_id", Uuid, ForeignKey("memberships.id", ondelete="SET NULL")),
    Column("trial_date", DateTime(timezone=True)),
    Column("next_action_at", DateTime(timezone=True)),
    Column("next_action_type", Text),
    Column("next_action_note", String(255)),
    Column("status_changed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # Returning leads: the last time a closed lead came back, what it was, through which entry point, and how
    # often. The Sales queue's `returned` reason reads these (nobody has tried the lead since returned_at).
    Column("returned_at", DateTime(timezone=True)),
    Column("returned_from_status", Text),
    Column("returned_via", Text),
    Column("return_count", Integer, nullable=False, server_default=text("0")),
    # A paused lead is left out of the queue until someone unpauses it; a return unpauses it.
    Column("paused_at", DateTime(timezone=True)),
    # Unanswered calls in a row (call outcomes); a return starts the count again.
    Column("consecutive_no_answer_count", Integer, nullable=False, server_default=text("0")),
    # Touches (services.touches): the last attempt of any kind, the last time a person was reached, and the
    # first touch a staff member logged (never an automatic acknowledgement; kept once set).
    Column("last_contact_attempt_at", DateTime(timezone=True)),
    Column("last_contacted_at", DateTime(timezone=True)),
    Column("first_human_response_at", DateTime(timezone=True)),
    # Conversations stamp the last message in and out (services.conversations, services.inbound_email); the
    # work queue's inbound_unanswered reason and the urgent prompt read them (the lead wrote last).
    Column("last_inbound_at", DateTime(timezone=True)),
    Column("last_outbound_at", DateTime(timezone=True)),
    # Scoring and qualification (services.scoring, services.qualification): a second dimension beside the
    # pipeline stage. The score is stored with the model version it came from; qualification_criteria holds
    # the BANT answers with their evidence; a nurtured lead is re-evaluated at reevaluate_at.
    Column("score", Integer),
    Column("score_model_version", Integer),
    Column("scored_at", DateTime(timezone=True)),
    Column("qualification_state", Text),
    Column("qualification_reason", Text),
    Column("qualification_criteria", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("qualification_changed_at", DateTime(timezone=True)),
    Column("reevaluate_at", DateTime(timezone=True)),
    Column("nurture_score", Integer),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", STAGE_CATEGORIES), name="status"),
    # NULL passes a CHECK: a lead that never returned has neither.
    CheckConstraint(one_of("returned_from_status", STAGE_CATEGORIES), name="returned_from_status"),
    CheckConstraint(one_of("returned_via", RETURN_VIAS), name="returned_via"),
    CheckConstraint("return_count >= 0", name="return_count_not_negative"),
    CheckConstraint("consecutive_no_answer_count >= 0", name="consecutive_no_answer_count_not_negative"),
    CheckConstraint(one_of("qualification_state", QUALIFICATION_STATES), name="qualification_state"),
    Index("ix_leads_org_id", "organization_id", "id"),
    # The work queue and the urgent prompt (services.work_queue, services.urgent_prompt): one partial index
    # per reason, each on the open, live, unpaused leads only, ordered by the instant the reason ranks by.
    Index(
        "ix_leads_queue_untouched_new",
        "organization_id",
        "created_at",
        "id",
        postgresql_where=text(f"{QUEUE_SCOPE_SQL} AND {UNTOUCHED_NEW_SQL}"),
    ),
    Index(
        "ix_leads_queue_unassigned",
        "organization_id",
        "created_at",
        "id",
        postgresql_where=text(f"{QUEUE_SCOPE_SQL} AND assigned_to_user_id IS NULL"),
    ),
    Index(
        "ix_leads_queue_follow_up",
        "organization_id",
        "next_action_at",
        "id",
        postgresql_where=text(f"{QUEUE_SCOPE_SQL} AND {REAL_FOLLOW_UP_SQL}"),
    ),
    Index(
        "ix_leads_queue_inbound_unanswered",
        "organization_id",
        "last_inbound_at",
        "id",
        postgresql_where=text(f"{QUEUE_SCOPE_SQL} AND {INBOUND_UNANSWERED_SQL}"),
    ),
    # The Sales queue's returned leads, newest return first.
    Index(
        "ix_leads_org_returned_at",
        "organization_id",
        "returned_at",
        postgresql_where=text("returned_at IS NOT NULL"),
    ),
    Index("ix_leads_org_status_id", "organization_id", "status", "id"),
    # The nurture re-evaluation job: nurtured leads by when they are due, across organizations.
    Index("ix_leads_nurture_due", "reevaluate_at", postgresql_where=text("qualification_state = 'nurturing'")),
    Index("ix_leads_org_lower_email", "organization_id", func.lower(text("email"))),
    Index("ix_leads_org_phone_digits", "organization_id", "phone_digits"),
    # Identity prefilter (domain.identity.last_seven_digits): the last seven digits survive every way a number
    # is typed (trunk zero, country code, dashes). An expression index, not a stored column: adding a
    # generated column would rewrite the whole table under an exclusive lock.
    Index("ix_leads_org_phone_last7", "organization_id", func.right(text("phone_digits"), 7)),
    Index("ix_leads_org_pipeline_stage", "organization_id", "pipeline_id", "stage_id", "id"),
    Index("ix_leads_org_assignee", "organization_id", "assigned_to_user_id", "id"),
    Index("ix_leads_org_campaign", "organization_id", "campaign_id", "id"),
    Index("ix_leads_org_updated_at", "organization_id", "updated_at", "id"),
    Index("ix_leads_org_status_changed_at", "organization_id", "status_changed_at", "id"),
    # The list's default sort (createdAt) pages on (created_at, id) within the organization.
    # Migration 0006 also adds planner statistics (an assignee, campaign, pipeline or stage belongs to one
    # organization) and turns parallel scans off for leads: Alembic does not model either.
    Index("ix_leads_org_created_at", "organization_id", "created_at", "id"),
    # Analytics (services.analytics): every figure is over the organization's real (non-test) leads created in
    # a period, read from this index alone (an index-only scan, no visit to the scattered heap rows).
    Index(
        "ix_leads_org_created_at_analytics",
        "organization_id",
        "created_at",
        postgresql_include=["id", "status", "source", "campaign_id", "first_human_response_at"],
        postgresql_where=text("NOT is_test"),
    ),
    # The organization's test enquiries (few), which every analytics figure leaves out.
    Index("ix_leads_org_test", "organization_id", postgresql_where=text("is_test")),
    # List search: substrings of name and email (ILIKE) and of the phone's digits, within the organization
    # (pg_trgm for the substrings, btree_gin for organization_id inside one GIN index).
    Index(
        "ix_leads_org_search_trgm",
        "organization_id",
        "name",
        "email",
        "phone_digits",
        postgresql_using="gin",
        postgresql_ops={"name": "gin_trgm_ops", "email": "gin_trgm_ops", "phone_digits": "gin_trgm_ops"},
    ),
)

# A lead's placements in pipelines other than its primary one (the primary lives on the lead row,
# which leads.status mirrors). set-primary swaps a placement with the lead row's pipeline and stage.
lead_pipeline_placements = Table(
    "lead_pipeline_placements",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("pipeline_id", Uuid, ForeignKey("pipelines.id", ondelete="CASCADE"), nullable=False),
    Column("stage_id", Uuid, ForeignKey("pipeline_stages.id"), nullable=False),
    created_at_column(),
    updated_at_column(),
    Index("uq_lead_pipeline_placements_lead_pipeline", "lead_id", "pipeline_id", unique=True),
    Index("ix_lead_pipeline_placements_org_pipeline_stage", "organization_id", "pipeline_id", "stage_id"),
)

# Campaign hooks: which exact ad, form or surface brought a lead. Integrations and minisite surfaces
# find-or-create on (organization, channel, external_ref); manual buckets have no external_ref.
lead_campaigns = Table(
    "lead_campaigns",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text, nullable=False),
    Column("channel", Text, nullable=False, server_default="manual"),
    Column("external_ref", Text),
    Column("color", Text),
    Column("archived_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    Index(
        "uq_lead_campaigns_org_channel_ref",
        "organization_id",
        "channel",
        "external_ref",
        unique=True,
        postgresql_where=text("external_ref IS NOT NULL"),
    ),
    # The campaign picker: live hooks by name (keyset on name, id).
    Index("ix_lead_campaigns_org_name", "organization_id", "name", "id", postgresql_where=text("archived_at IS NULL")),
)

lead_tags = Table(
    "lead_tags",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text, nullable=False),
    Column("category", Text, nullable=False, server_default="label"),
    Column("color", Text),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("category", TAG_CATEGORIES), name="category"),
    Index("uq_lead_tags_org_category_name", "organization_id", "category", func.lower(text("name")), unique=True),
)

lead_tag_assignments = Table(
    "lead_tag_assignments",
    metadata,
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("tag_id", Uuid, ForeignKey("lead_tags.id", ondelete="CASCADE"), nullable=False),
    org_column(),
    created_at_column(),
    PrimaryKeyConstraint("lead_id", "tag_id", name="pk_lead_tag_assignments"),
    Index("ix_lead_tag_assignments_org_tag_lead", "organization_id", "tag_id", "lead_id"),
)

# What each entry point received, as it was sent: corrections to the lead never erase the visitor's words.
lead_receipts = Table(
    "lead_receipts",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("channel", Text, nullable=False),
    Column("duplicate", Boolean, nullable=False, server_default=text("false")),
    Column("payload", JSONB, nullable=False),
    Column("received_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Index("ix_lead_receipts_org_lead", "organization_id", "lead_id", "received_at"),
)

# The organization's minisite events (published by the platform): a capture naming one is checked
# against this table, and the event's campaign hook is resolved here, never taken from the caller.
minisite_events = Table(
    "minisite_events",
    metadata,
    id_column(),
    org_column(),
    Column("title", Text, nullable=False),
    Column("campaign_id", Uuid, ForeignKey("lead_campaigns.id", ondelete="SET NULL")),
    Column("archived_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
)

# Fixed-window request counters for public endpoints (per client IP, per organization).
rate_limit_counters = Table(
    "rate_limit_counters",
    metadata,
    Column("bucket", Text, nullable=False),
    Column("window_start", DateTime(timezone=True), nullable=False),
    Column("hits", Integer, nullable=False, server_default=text("1")),
    PrimaryKeyConstraint("bucket", "window_start", name="pk_rate_limit_counters"),
    Index("ix_rate_limit_counters_window_start", "window_start"),
)

lead_status_events = Table(
    "lead_status_events",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("from_status", Text),
    Column("to_status", Text, nullable=False),
    Column("from_stage_id", Uuid),
    Column("to_stage_id", Uuid),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # Why the lead moved, when the move needs one (the lost reason): the history keeps every reason.
    Column("reason", Text),
    Column("changed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # Covering, and in the order the funnel walks each lead's history (services.analytics): an organization's
    # events are read from the index alone, already sorted for the window over each lead's events.
    Index(
        "ix_lead_status_events_lead",
        "organization_id",
        "lead_id",
        "changed_at",
        "id",
        postgresql_include=["to_status", "to_stage_id"],
    ),
    # When each lead first won (attribution: a customer won within the window after its first touch).
    Index(
        "ix_lead_status_events_org_won",
        "organization_id",
        "lead_id",
        postgresql_include=["changed_at"],
        postgresql_where=text("to_status IN ('converted', 'customer')"),
    ),
)

lead_activity_events = Table(
    "lead_activity_events",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("type", Text, nullable=False),
    Column("payload", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # The event that caused this entry, when a consumer wrote it: a redelivery records nothing more.
    Column("source_event_id", Uuid),
    Column("occurred_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Index("ix_lead_activity_events_lead", "organization_id", "lead_id", "occurred_at"),
    Index(
        "uq_lead_activity_events_source_event",
        "source_event_id",
        "type",
        unique=True,
        postgresql_where=text("source_event_id IS NOT NULL"),
    ),
)

tasks = Table(
    "tasks",
    metadata,
    id_column(),
    org_column(),
    Column("type", Text, nullable=False, server_default="general"),
    Column("title", Text, nullable=False),
    Column("description", Text),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("priority", Text, nullable=False, server_default="medium"),
    Column("source", Text, nullable=False, server_default="manual"),
    Column("due_date", Date),
    Column("due_time", Time),
    Column("assignee_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # NO ACTION on purpose: erasing a lead deletes its tasks first (their titles carry the lead's name).
    Column("linked_lead_id", Uuid, ForeignKey("leads.id")),
    # The deal a task is about (the rotting sweep's re-engagement task, services.deal_rotting).
    Column("linked_deal_id", Uuid, ForeignKey("deals.id", ondelete="SET NULL")),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("completed_at", DateTime(timezone=True)),
    Column("cancelled_at", DateTime(timezone=True)),
    Column("deleted_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", TASK_STATUSES), name="status"),
    CheckConstraint(one_of("priority", TASK_PRIORITIES), name="priority"),
    Index("ix_tasks_org_assignee_status", "organization_id", "assignee_user_id", "status", "due_date"),
    Index("ix_tasks_org_linked_lead", "organization_id", "linked_lead_id"),
    # The Tasks page: keyset pages on (due_date, id) within the organization.
    Index("ix_tasks_org_due_date", "organization_id", "due_date", "id"),
    # The urgent prompt: a staff member's open tasks due up to today.
    Index(
        "ix_tasks_open_assignee_due",
        "organization_id",
        "assignee_user_id",
        "due_date",
        postgresql_where=text("status IN ('pending', 'in_progress') AND deleted_at IS NULL"),
    ),
    # A lead has at most one open contact task: it is the lead's follow-up.
    Index(
        "tasks_open_contact_lead_unique_idx",
        "linked_lead_id",
        unique=True,
        postgresql_where=text("type = 'contact_lead' AND status IN ('pending', 'in_progress') AND deleted_at IS NULL"),
    ),
)

CONSENT_CHANNELS = ("email", "sms", "whatsapp", "call")
CONSENT_STATUSES = ("granted", "revoked")

# A lead's current consent per channel (services.consent), kept in step with the append-only ledger
# lead_consent_events. No row: nothing was said, the channel is allowed.
lead_consents = Table(
    "lead_consents",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("channel", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("legal_basis", Text),
    updated_at_column(),
    CheckConstraint(one_of("channel", CONSENT_CHANNELS), name="channel"),
    CheckConstraint(one_of("status", CONSENT_STATUSES), name="status"),
    Index("uq_lead_consents_lead_channel", "lead_id", "channel", unique=True),
)

# The morning urgent prompt, per staff member and organization: the organization-local day it was last
# shown (once a day), and until when it is snoozed.
staff_prompt_states = Table(
    "staff_prompt_states",
    metadata,
    Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), nullable=False),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("last_shown_on", Date),
    Column("snoozed_until", DateTime(timezone=True)),
    updated_at_column(),
    PrimaryKeyConstraint("organization_id", "user_id", name="pk_staff_prompt_states"),
)

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

DIGEST_DELIVERY_STATUSES = ("sending", "sent", "failed")

# The morning digest (services.digest): at most one per staff member, organization and organization-local
# day. The row is claimed (INSERT … ON CONFLICT DO NOTHING) and committed before the mail is sent, so a
# second run the same day sends nothing more; the outcome (sent, or failed with the error) is written after.
staff_digest_deliveries = Table(
    "staff_digest_deliveries",
    metadata,
    id_column(),
    org_column(),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("local_date", Date, nullable=False),
    Column("status", Text, nullable=False, server_default="sending"),
    Column("counts", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("provider_message_id", Text),
    Column("error", Text),
    Column("sent_at", DateTime(timezone=True)),
    created_at_column(),
    CheckConstraint(one_of("status", DIGEST_DELIVERY_STATUSES), name="status"),
    Index("uq_staff_digest_deliveries_org_user_date", "organization_id", "user_id", "local_date", unique=True),
)

# The other areas' tables join the same MetaData (Alembic and the drift test read this module's).
from leadcrm.db import (  # noqa: E402, F401  (imported for their tables)
    tables_analytics,
    tables_conversations,
    tables_deals,
    tables_ingestion,
    tables_qualification,
    tables_tickets,
)
