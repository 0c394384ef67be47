"""The leads tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    cast,
    func,
    literal_column,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.sql.elements import ColumnElement

from leadcrm.pipelines.tables import STAGE_CATEGORIES
from leadcrm.platform.db.columns import (
    created_at_column,
    id_column,
    metadata,
    one_of,
    org_column,
    stamp_column,
    updated_at_column,
)

TAG_CATEGORIES = ("label", "purchase")

QUALIFICATION_STATES = ("scored", "qualified", "nurturing", "disqualified")

# The entry points a closed lead came back through (leads.returned_via), see leads.rules.returning.ReturnVia.
RETURN_VIAS = ("public_capture", "staff_create", "meta", "whatsapp", "join_released", "staff_reopen")

# The work queue's scope and reasons as SQL, shared by its partial indexes and by the queries that must
# repeat them word for word for PostgreSQL to prove an index applies (work.rules.attention states the rules).
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
    stamp_column("status_changed_at"),
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
    # Touches (work.touches): the last attempt of any kind, the last time a person was reached, and the
    # first touch a staff member logged (never an automatic acknowledgement; kept once set).
    Column("last_contact_attempt_at", DateTime(timezone=True)),
    Column("last_contacted_at", DateTime(timezone=True)),
    Column("first_human_response_at", DateTime(timezone=True)),
    # Conversations stamp the last message in and out (conversations.threads, conversations.inbound_email); the
    # work queue's inbound_unanswered reason and the urgent prompt read them (the lead wrote last).
    Column("last_inbound_at", DateTime(timezone=True)),
    Column("last_outbound_at", DateTime(timezone=True)),
    # Scoring and qualification (qualification.scoring, qualification.qualification): a second dimension beside the
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
    # Bumped by PostgreSQL once per transaction that writes the lead, its placements or its follow-up
    # (migration 0026); a person's write may send the version it read (leads.versions).
    Column("version", Integer, nullable=False, server_default=text("1")),
    Column("version_xact", BigInteger, server_default=text("txid_current()")),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", STAGE_CATEGORIES), name="status"),
    # NULL passes a CHECK: a lead that never returned has neither.
    CheckConstraint(one_of("returned_from_status", STAGE_CATEGORIES), name="returned_from_status"),
    CheckConstraint(one_of("returned_via", RETURN_VIAS), name="returned_via"),
    CheckConstraint("return_count >= 0", name="return_count_not_negative"),
    CheckConstraint("consecutive_no_answer_count >= 0", name="consecutive_no_answer_count_not_negative"),
    CheckConstraint(one_of("qualification_state", QUALIFICATION_STATES), name="qualification_state"),
    # What the history tables reference (migration 0024): a lead within its organization.
    UniqueConstraint("organization_id", "id", name="uq_leads_organization_id_id"),
    # The work queue and the urgent prompt (work.queue, work.urgent_prompt): one partial index
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
    Index("ix_leads_org_pipeline_stage", "organization_id", "pipeline_id", "stage_id", "id"),
    Index("ix_leads_org_assignee", "organization_id", "assigned_to_user_id", "id"),
    Index("ix_leads_org_campaign", "organization_id", "campaign_id", "id"),
    Index("ix_leads_org_updated_at", "organization_id", "updated_at", "id"),
    Index("ix_leads_org_status_changed_at", "organization_id", "status_changed_at", "id"),
    # The list's default sort (createdAt) pages on (created_at, id) within the organization.
    # Migration 0006 also adds planner statistics (an assignee, campaign, pipeline or stage belongs to one
    # organization) and turns parallel scans off for leads: Alembic does not model either.
    Index("ix_leads_org_created_at", "organization_id", "created_at", "id"),
    # Analytics (analytics.reports): every figure is over the organization's real (non-test) leads created in
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


def _organization_key(value: ColumnElement[str]) -> ColumnElement[str]:
    """`<organization id> <value>`: one indexed key naming the organization, so that a lookup asks for it alone
    and no other index on organization_id can answer it (migration 0034)."""
    return cast(leads.c.organization_id, Text).concat(literal_column("' '")).concat(value)


# Dedup's keys (leads.dedup): a lead by its email, case-insensitive, and by the last seven digits of its phone,
# which survive every way a number is typed (trunk zero, country code, dashes; leads.rules.identity).
LEAD_EMAIL_KEY = _organization_key(func.lower(leads.c.email))
LEAD_PHONE_KEY = _organization_key(func.right(leads.c.phone_digits, literal_column("7")))
# The indexes on them, as PostgreSQL renders them back (Alembic compares that text; the plan tests in
# tests/integration/leads/test_dedup_lookup_plans.py check the lookups use them).
Index("ix_leads_email_key", text("((organization_id::text || ' '::text) || lower(email))"), _table=leads)
Index("ix_leads_phone_key", text("((organization_id::text || ' '::text) || right(phone_digits, 7))"), _table=leads)

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
    stamp_column("received_at"),
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
    Column("organization_id", Uuid, nullable=False),
    Column("lead_id", Uuid, nullable=False),
    # One key for both: the lead, within the row's organization (migration 0024).
    ForeignKeyConstraint(
        ["organization_id", "lead_id"],
        ["leads.organization_id", "leads.id"],
        name="fk_lead_status_events_organization_id_leads",
        ondelete="CASCADE",
    ),
    Column("from_status", Text),
    Column("to_status", Text, nullable=False),
    Column("from_stage_id", Uuid),
    Column("to_stage_id", Uuid),
    # The acting user: no foreign key (migration 0033): users are never deleted (a trigger refuses it),
    # and history rows are written by the thousand.
    Column("actor_user_id", Uuid),
    # Why the lead moved, when the move needs one (the lost reason): the history keeps every reason.
    Column("reason", Text),
    stamp_column("changed_at"),
    # The transaction that wrote the event (migration 0026): with the timeline entries of the same
    # transaction, one operation's timeline group.
    Column("group_xact", BigInteger, server_default=text("txid_current()")),
    # Covering, and in the order the funnel walks each lead's history (analytics.reports): an organization's
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
    Column("organization_id", Uuid, nullable=False),
    Column("lead_id", Uuid, nullable=False),
    # One key for both: the lead, within the row's organization (migration 0024).
    ForeignKeyConstraint(
        ["organization_id", "lead_id"],
        ["leads.organization_id", "leads.id"],
        name="fk_lead_activity_events_organization_id_leads",
        ondelete="CASCADE",
    ),
    Column("type", Text, nullable=False),
    Column("payload", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    # The acting user: no foreign key (migration 0033): users are never deleted (a trigger refuses it),
    # and history rows are written by the thousand.
    Column("actor_user_id", Uuid),
    # The event that caused this entry, when a consumer wrote it: a redelivery records nothing more.
    Column("source_event_id", Uuid),
    stamp_column("occurred_at"),
    # The transaction that wrote the entry (migration 0026): one operation's entries are one timeline group.
    Column("group_xact", BigInteger, server_default=text("txid_current()")),
    Index("ix_lead_activity_events_lead", "organization_id", "lead_id", "occurred_at"),
    Index(
        "uq_lead_activity_events_source_event",
        "source_event_id",
        "type",
        unique=True,
        postgresql_where=text("source_event_id IS NOT NULL"),
    ),
)

# What brought a touch (leads.rules.touches.TouchKind).
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
    stamp_column("occurred_at"),
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

# Pseudonymized erasure: the lead's personal data is gone, and these keyed hashes of its canonical email and
# phone stand in for them, so dedup still recognizes the person and analytics still count one lead.
lead_pseudonyms = Table(
    "lead_pseudonyms",
    metadata,
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), primary_key=True),
    org_column(),
    Column("email_token", Text),
    Column("phone_token", Text),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    stamp_column("pseudonymized_at"),
    Index("ix_lead_pseudonyms_org_email_token", "organization_id", "email_token"),
    Index("ix_lead_pseudonyms_org_phone_token", "organization_id", "phone_token"),
)


LEAD_COLUMNS = (
    leads.c.id,
    leads.c.organization_id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.locale,
    leads.c.note,
    leads.c.lost_reason,
    leads.c.source,
    leads.c.status,
    leads.c.pipeline_id,
    leads.c.stage_id,
    leads.c.campaign_id,
    leads.c.assigned_to_user_id,
    leads.c.is_test,
    leads.c.archived_at,
    leads.c.trial_date,
    leads.c.next_action_at,
    leads.c.next_action_type,
    leads.c.next_action_note,
    leads.c.returned_at,
    leads.c.returned_from_status,
    leads.c.returned_via,
    leads.c.return_count,
    leads.c.last_contacted_at,
    leads.c.first_human_response_at,
    leads.c.score,
    leads.c.score_model_version,
    leads.c.qualification_state,
    leads.c.status_changed_at,
    leads.c.created_at,
    leads.c.updated_at,
    leads.c.version,
)

# Assignment rules (leads.assignment, leads.rules.assignment): tried in `position` order when a lead arrives
# without an owner; the first that matches and can place it wins. Empty condition arrays match anything.
ASSIGNMENT_STRATEGIES = ("round_robin", "least_loaded", "fixed")

lead_assignment_rules = Table(
    "lead_assignment_rules",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text, nullable=False),
    Column("position", Integer, nullable=False),
    Column("active", Boolean, nullable=False, server_default=text("true")),
    Column("sources", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("campaign_ids", ARRAY(Uuid), nullable=False, server_default=text("'{}'::uuid[]")),
    Column("pipeline_ids", ARRAY(Uuid), nullable=False, server_default=text("'{}'::uuid[]")),
    Column("form_refs", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("languages", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    # Minutes of the day in the organization's timezone, [from, to); both or neither; from > to wraps midnight.
    Column("window_from", Integer),
    Column("window_to", Integer),
    Column("strategy", Text, nullable=False),
    Column("user_ids", ARRAY(Uuid), nullable=False, server_default=text("'{}'::uuid[]")),
    Column("capacity", Integer),
    # Round-robin: the position in user_ids tried first; moved under the rule's row lock by every intake.
    Column("cursor", Integer, nullable=False, server_default=text("0")),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("strategy", ASSIGNMENT_STRATEGIES), name="strategy"),
    CheckConstraint("position >= 0", name="position_not_negative"),
    CheckConstraint("(window_from IS NULL) = (window_to IS NULL)", name="window_both_or_neither"),
    Index("ix_lead_assignment_rules_org_position", "organization_id", "position", "id"),
)
