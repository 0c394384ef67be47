"""The directory tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.platform.db.columns import created_at_column, id_column, metadata, one_of, org_column, updated_at_column

ROLES = ("owner", "admin", "coach", "member")

MEMBERSHIP_STATUSES = ("active", "pending_invitation", "cancelled", "suspended")

USER_KINDS = ("account", "managed")

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
    # Who takes work nobody else is named for: a departed member's open deals, leads and tasks
    # (deals.owner_departure, directory.default_assignee) and unowned returning leads. NULL: the oldest active owner.
    Column("default_assignee_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # When each shared setting (name, timezone, country_code, locale) last changed, from either side: the
    # platform's organization.* events (their updatedAt) or the settings route (now). A change older than the
    # field's time is not applied, so the two writers never undo each other (directory.rules.settings_to_apply).
    Column("settings_changed_at", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    # The updatedAt of the newest platform organization.* event applied (order tolerance), and its deletion:
    # a deleted organization admits nobody, and no older event revives it.
    Column("platform_updated_at", DateTime(timezone=True)),
    Column("deleted_at", DateTime(timezone=True)),
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
    Column("platform_updated_at", DateTime(timezone=True)),  # newest user.* event applied
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
    Column("platform_updated_at", DateTime(timezone=True)),  # newest membership.* event applied
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

# Platform events that cannot be applied yet, kept until what they wait for arrives (directory.held): a
# membership whose user or organization is not here yet (or known only by its deletion), an organization's
# deletion before its creation, a user's email or subject another user still holds, and another capability's
# event waiting for its membership (`membership.self_signup`, kind = its detail type). One row per held thing,
# keeping its newest version and its tombstone; no foreign keys: what it names may not exist yet.
HELD_KINDS = ("membership", "organization", "user", "membership.self_signup")
HELD_WAITING_FOR = ("organization", "user", "creation", "live_membership", "email", "auth_subject", "membership")

directory_held_events = Table(
    "directory_held_events",
    metadata,
    Column("kind", Text, primary_key=True),
    Column("subject_id", Uuid, primary_key=True),  # the membership's, organization's or user's id
    Column("organization_id", Uuid),
    Column("user_id", Uuid),
    Column("waiting_for", Text, nullable=False),
    Column("detail_type", Text, nullable=False),  # of the newest version held
    Column("detail", JSONB),  # the newest version (normalized); NULL: only a deletion is known
    Column("version", DateTime(timezone=True)),  # its updatedAt
    Column("deleted_at", DateTime(timezone=True)),  # a deletion seen (the earliest)
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("kind", HELD_KINDS), name="kind"),
    CheckConstraint(one_of("waiting_for", HELD_WAITING_FOR), name="waiting_for"),
    Index("ix_directory_held_events_organization_id", "organization_id"),
    Index("ix_directory_held_events_user_id", "user_id"),
)

# When a staff member takes new leads (leads.assignment): away until an instant, and working hours (a list of
# {"day": ISO weekday 1-7, "from": "HH:MM", "to": "HH:MM"} in the organization's timezone; empty: any time).
# No row: always available. Kept per organization: a person may work for two studios.
staff_availability = Table(
    "staff_availability",
    metadata,
    org_column(),
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("away_until", DateTime(timezone=True)),
    Column("working_hours", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    created_at_column(),
    updated_at_column(),
    PrimaryKeyConstraint("organization_id", "user_id"),
)
