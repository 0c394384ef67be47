"""The tickets tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    Text,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from leadcrm.platform.db.columns import (
    created_at_column,
    id_column,
    metadata,
    one_of,
    org_column,
    stamp_column,
    updated_at_column,
)

TICKET_STATUSES = (
    "new",
    "unassigned",
    "assigned",
    "in_progress",
    "escalated",
    "awaiting_customer",
    "resolved",
    "reopened",
    "closed",
)

TICKET_PRIORITIES = ("low", "normal", "high", "urgent")

TICKET_CHANNELS = ("email", "portal", "phone", "chat", "api")

REQUESTER_TYPES = ("member", "lead", "unknown")

CLOSE_REASONS = ("confirmed", "auto_closed")

MESSAGE_DIRECTIONS = ("inbound", "outbound")

TICKET_MAIL_KINDS = ("resolution_confirmation", "satisfaction_survey")

TICKET_MAIL_STATUSES = ("pending", "sending", "sent", "failed", "skipped")

# The organization's helpdesk settings: one row, made on first use. `support_token` names the organization in
# its support address (tickets.rules.mail); `last_ticket_number` hands out the human ticket numbers (#1042).
ticket_settings = Table(
    "ticket_settings",
    metadata,
    Column("organization_id", Uuid, ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True),
    Column("support_token", Text, nullable=False, unique=True),
    # {"mon": [["09:00", "17:00"]], ...} in the organization's timezone (organizations.timezone)
    Column("business_hours", JSONB, nullable=False),
    Column("auto_close_hours", Integer, nullable=False, server_default=text("72")),
    # Escalate (and warn) when this share of a target's business time is used up.
    Column("escalation_percent", Integer, nullable=False, server_default=text("80")),
    # §3 "Resolved: paused or running based on policy".
    Column("resolved_pauses_timer", Boolean, nullable=False, server_default=text("true")),
    Column("last_ticket_number", Integer, nullable=False, server_default=text("0")),
    updated_at_column(),
    CheckConstraint("auto_close_hours BETWEEN 1 AND 2160", name="auto_close_hours"),
    CheckConstraint("escalation_percent BETWEEN 1 AND 99", name="escalation_percent"),
    CheckConstraint("last_ticket_number >= 0", name="last_ticket_number"),
)

ticket_holidays = Table(
    "ticket_holidays",
    metadata,
    org_column(),
    Column("holiday_date", Date, nullable=False),
    Column("name", Text, nullable=False),
    PrimaryKeyConstraint("organization_id", "holiday_date", name="pk_ticket_holidays"),
)

# Targets per priority in business minutes; a priority without a row uses domain defaults (tickets.tickets).
ticket_sla_policies = Table(
    "ticket_sla_policies",
    metadata,
    org_column(),
    Column("priority", Text, nullable=False),
    Column("first_response_minutes", Integer, nullable=False),
    Column("resolution_minutes", Integer, nullable=False),
    updated_at_column(),
    PrimaryKeyConstraint("organization_id", "priority", name="pk_ticket_sla_policies"),
    CheckConstraint(one_of("priority", TICKET_PRIORITIES), name="priority"),
    CheckConstraint("first_response_minutes > 0 AND resolution_minutes > 0", name="targets_positive"),
)

ticket_queues = Table(
    "ticket_queues",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text, nullable=False),
    # The higher-tier agent of the queue: may take ownership of its escalated tickets (as owners and admins may).
    Column("escalation_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("archived_at", DateTime(timezone=True)),
    created_at_column(),
    updated_at_column(),
    Index("uq_ticket_queues_org_lower_name", "organization_id", func.lower(text("name")), unique=True),
)

ticket_routing_rules = Table(
    "ticket_routing_rules",
    metadata,
    id_column(),
    org_column(),
    Column("name", Text, nullable=False),
    Column("position", Integer, nullable=False),
    # Empty array: any value matches.
    Column("channels", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("priorities", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("requester_types", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("keywords", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("queue_id", Uuid, ForeignKey("ticket_queues.id", ondelete="SET NULL")),
    Column("assignee_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("active", Boolean, nullable=False, server_default=text("true")),
    created_at_column(),
    updated_at_column(),
    CheckConstraint("position >= 0", name="position_not_negative"),
    Index("ix_ticket_routing_rules_org_position", "organization_id", "position", "id"),
)

tickets = Table(
    "tickets",
    metadata,
    id_column(),
    org_column(),
    Column("number", Integer, nullable=False),
    Column("subject", Text, nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("status", Text, nullable=False),
    Column("priority", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("requester_type", Text, nullable=False),
    # Erasing a lead erases its tickets (their text is the lead's words): no PII left behind.
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE")),
    Column("membership_id", Uuid, ForeignKey("memberships.id", ondelete="SET NULL")),
    Column("requester_email", Text),
    Column("queue_id", Uuid, ForeignKey("ticket_queues.id", ondelete="SET NULL")),
    # The accountable agent (§8: follows the assignment; the clock does not care who holds the ticket).
    Column("assignee_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("routing_rule_id", Uuid, ForeignKey("ticket_routing_rules.id", ondelete="SET NULL")),
    # The email thread (conversations, issue 7). No foreign key yet: the lead adds it when both are merged.
    Column("conversation_id", Uuid),
    Column("previous_ticket_id", Uuid, ForeignKey("tickets.id", ondelete="SET NULL")),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    # Targets copied from the policy when the ticket was made: editing a policy does not move open tickets.
    Column("first_response_target_minutes", Integer, nullable=False),
    Column("resolution_target_minutes", Integer, nullable=False),
    # First response: due and warn instants fixed at creation (the target runs from creation, never pauses:
    # every message to the customer, including a request for information or a proposed fix, answers it).
    Column("first_response_due_at", DateTime(timezone=True), nullable=False),
    Column("first_response_warn_at", DateTime(timezone=True), nullable=False),
    Column("first_responded_at", DateTime(timezone=True)),
    Column("first_response_seconds", Integer),  # business seconds from creation to the first response
    Column("first_response_breached_at", DateTime(timezone=True)),
    # Resolution clock of the current cycle (creation, or the last reopen): business seconds counted in
    # finished running spans, since when it runs (NULL: paused or stopped), and the instants it reaches
    # warn and due if it keeps running (NULL while it does not).
    Column("sla_cycle_started_at", DateTime(timezone=True), nullable=False),
    Column("resolution_elapsed_seconds", Integer, nullable=False, server_default=text("0")),
    Column("sla_running_since", DateTime(timezone=True)),
    Column("resolution_due_at", DateTime(timezone=True)),
    Column("resolution_warn_at", DateTime(timezone=True)),
    Column("resolution_breached_at", DateTime(timezone=True)),
    Column("resolution_seconds", Integer),  # business seconds of the cycle when it was last resolved
    # Targets missed over the ticket's life (a reopen starts a new resolution cycle; its breach counts again).
    Column("breach_count", Integer, nullable=False, server_default=text("0")),
    Column("escalated_at", DateTime(timezone=True)),
    Column("resolution", Text),
    Column("resolved_at", DateTime(timezone=True)),
    Column("closed_at", DateTime(timezone=True)),
    Column("close_reason", Text),
    Column("reopened_at", DateTime(timezone=True)),
    Column("reopen_reason", Text),
    Column("reopen_count", Integer, nullable=False, server_default=text("0")),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", TICKET_STATUSES), name="status"),
    CheckConstraint(one_of("priority", TICKET_PRIORITIES), name="priority"),
    CheckConstraint(one_of("channel", TICKET_CHANNELS), name="channel"),
    CheckConstraint(one_of("requester_type", REQUESTER_TYPES), name="requester_type"),
    CheckConstraint(one_of("close_reason", CLOSE_REASONS), name="close_reason"),
    CheckConstraint("resolution_elapsed_seconds >= 0", name="resolution_elapsed_not_negative"),
    CheckConstraint("breach_count >= 0", name="breach_count_not_negative"),
    Index("uq_tickets_org_number", "organization_id", "number", unique=True),
    # Lists: newest first (UUIDv7 ids are time-ordered) within the organization, by status, agent or queue.
    Index("ix_tickets_org_id", "organization_id", "id"),
    Index("ix_tickets_org_status_id", "organization_id", "status", "id"),
    Index("ix_tickets_org_assignee_id", "organization_id", "assignee_user_id", "id"),
    Index("ix_tickets_org_queue_id", "organization_id", "queue_id", "id"),
    Index("ix_tickets_org_lead", "organization_id", "lead_id"),
    Index("ix_tickets_org_membership", "organization_id", "membership_id"),
    Index("ix_tickets_org_lower_requester_email", "organization_id", func.lower(text("requester_email"))),
    # The sweep (tickets.sweep): each step reads one small partial index across organizations.
    Index(
        "ix_tickets_sweep_escalate",
        "first_response_warn_at",
        postgresql_where=text("status = 'assigned' AND first_responded_at IS NULL AND escalated_at IS NULL"),
    ),
    Index(
        "ix_tickets_sweep_first_response_breach",
        "first_response_due_at",
        postgresql_where=text(
            "first_responded_at IS NULL AND first_response_breached_at IS NULL AND status <> 'closed'"
        ),
    ),
    Index(
        "ix_tickets_sweep_resolution_breach",
        "resolution_due_at",
        postgresql_where=text("resolution_due_at IS NOT NULL AND resolution_breached_at IS NULL"),
    ),
    Index("ix_tickets_sweep_auto_close", "resolved_at", postgresql_where=text("status = 'resolved'")),
    # Reports: tickets created in a period, per organization.
    Index("ix_tickets_org_created_at", "organization_id", "created_at"),
)

# What happened to a ticket, in order: status changes with their trigger, assignments (who, by which rule or
# person), escalations and breaches, mails, survey answers. Payloads carry ids and codes (and a reopen's
# reason as given); no contact details.
ticket_events = Table(
    "ticket_events",
    metadata,
    id_column(),
    org_column(),
    Column("ticket_id", Uuid, ForeignKey("tickets.id", ondelete="CASCADE"), nullable=False),
    Column("type", Text, nullable=False),
    Column("from_status", Text),
    Column("to_status", Text),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("payload", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    stamp_column("occurred_at"),
    Index("ix_ticket_events_ticket", "organization_id", "ticket_id", "occurred_at", "id"),
)

# Messages of the ticket that the helpdesk itself saw: inbound email (the seam with conversations), and
# responses staff logged. `external_message_id` (the email Message-ID) makes inbound delivery idempotent.
ticket_messages = Table(
    "ticket_messages",
    metadata,
    id_column(),
    org_column(),
    Column("ticket_id", Uuid, ForeignKey("tickets.id", ondelete="CASCADE"), nullable=False),
    Column("direction", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("external_message_id", Text),
    Column("in_reply_to", Text),
    Column("sender_email", Text),
    Column("subject", Text),
    Column("body", Text, nullable=False, server_default=""),
    Column("author_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    created_at_column(),
    CheckConstraint(one_of("direction", MESSAGE_DIRECTIONS), name="direction"),
    CheckConstraint(one_of("channel", TICKET_CHANNELS), name="channel"),
    Index("ix_ticket_messages_ticket", "organization_id", "ticket_id", "occurred_at"),
    Index(
        "uq_ticket_messages_org_external_id",
        "organization_id",
        "external_message_id",
        unique=True,
        postgresql_where=text("external_message_id IS NOT NULL"),
    ),
)

# Mails a ticket sends (resolution confirmation, satisfaction survey), written `pending` in the transaction
# that decided them and sent by the sweep through SES; the row keeps the outcome and the SES message id
# (a reply's In-Reply-To names it).
ticket_mails = Table(
    "ticket_mails",
    metadata,
    id_column(),
    org_column(),
    Column("ticket_id", Uuid, ForeignKey("tickets.id", ondelete="CASCADE"), nullable=False),
    Column("kind", Text, nullable=False),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("to_address", Text),
    Column("provider_message_id", Text),
    Column("error", Text),
    Column("sent_at", DateTime(timezone=True)),
    created_at_column(),
    CheckConstraint(one_of("kind", TICKET_MAIL_KINDS), name="kind"),
    CheckConstraint(one_of("status", TICKET_MAIL_STATUSES), name="status"),
    Index("ix_ticket_mails_ticket", "organization_id", "ticket_id", "created_at"),
    Index("ix_ticket_mails_pending", "created_at", postgresql_where=text("status = 'pending'")),
    Index(
        "ix_ticket_mails_org_provider_id",
        "organization_id",
        "provider_message_id",
        postgresql_where=text("provider_message_id IS NOT NULL"),
    ),
)

# One satisfaction survey per ticket, answered once. The public link carries a random token; only its
# SHA-256 digest is stored (made when the survey mail is sent), so the table cannot answer for anyone.
ticket_surveys = Table(
    "ticket_surveys",
    metadata,
    id_column(),
    org_column(),
    Column("ticket_id", Uuid, ForeignKey("tickets.id", ondelete="CASCADE"), nullable=False, unique=True),
    Column("token_digest", Text, unique=True),
    Column("rating", Integer),
    Column("comment", Text),
    Column("answered_at", DateTime(timezone=True)),
    created_at_column(),
    CheckConstraint("rating BETWEEN 1 AND 5", name="rating"),
    CheckConstraint("(rating IS NULL) = (answered_at IS NULL)", name="answered_with_rating"),
)
