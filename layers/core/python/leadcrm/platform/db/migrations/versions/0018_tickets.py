"""tickets: Helpdesk tickets, routing rules, SLA policies and calendars (issue 12).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29

New tables only (no change to existing ones): ticket settings, holidays, SLA policies, queues, routing
rules, tickets with their events, messages, mails and surveys. `tickets.conversation_id` has no foreign key
yet: conversations (0014) adds its table on another branch; the key is added when both are merged.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ticket_holidays",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("holiday_date", sa.Date(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_holidays_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "holiday_date", name="pk_ticket_holidays"),
    )
    op.create_table(
        "ticket_queues",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("escalation_user_id", sa.Uuid(), nullable=True),
        sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["escalation_user_id"],
            ["users.id"],
            name=op.f("fk_ticket_queues_escalation_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_queues_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ticket_queues")),
    )
    op.create_index(
        "uq_ticket_queues_org_lower_name",
        "ticket_queues",
        ["organization_id", sa.literal_column("lower(name)")],
        unique=True,
    )
    op.create_table(
        "ticket_settings",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("support_token", sa.Text(), nullable=False),
        sa.Column("business_hours", postgresql.JSONB(astext_type=Text()), nullable=False),
        sa.Column("auto_close_hours", sa.Integer(), server_default=sa.text("72"), nullable=False),
        sa.Column("escalation_percent", sa.Integer(), server_default=sa.text("80"), nullable=False),
        sa.Column("resolved_pauses_timer", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("last_ticket_number", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("auto_close_hours BETWEEN 1 AND 2160", name=op.f("ck_ticket_settings_auto_close_hours")),
        sa.CheckConstraint("escalation_percent BETWEEN 1 AND 99", name=op.f("ck_ticket_settings_escalation_percent")),
        sa.CheckConstraint("last_ticket_number >= 0", name=op.f("ck_ticket_settings_last_ticket_number")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_settings_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", name=op.f("pk_ticket_settings")),
        sa.UniqueConstraint("support_token", name=op.f("uq_ticket_settings_support_token")),
    )
    op.create_table(
        "ticket_sla_policies",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("priority", sa.Text(), nullable=False),
        sa.Column("first_response_minutes", sa.Integer(), nullable=False),
        sa.Column("resolution_minutes", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "priority IN ('low', 'normal', 'high', 'urgent')", name=op.f("ck_ticket_sla_policies_priority")
        ),
        sa.CheckConstraint(
            "first_response_minutes > 0 AND resolution_minutes > 0",
            name=op.f("ck_ticket_sla_policies_targets_positive"),
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_sla_policies_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "priority", name="pk_ticket_sla_policies"),
    )
    op.create_table(
        "ticket_routing_rules",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("channels", postgresql.ARRAY(Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("priorities", postgresql.ARRAY(Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("requester_types", postgresql.ARRAY(Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("keywords", postgresql.ARRAY(Text()), server_default=sa.text("'{}'::text[]"), nullable=False),
        sa.Column("queue_id", sa.Uuid(), nullable=True),
        sa.Column("assignee_user_id", sa.Uuid(), nullable=True),
        sa.Column("active", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("position >= 0", name=op.f("ck_ticket_routing_rules_position_not_negative")),
        sa.ForeignKeyConstraint(
            ["assignee_user_id"],
            ["users.id"],
            name=op.f("fk_ticket_routing_rules_assignee_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_routing_rules_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["queue_id"],
            ["ticket_queues.id"],
            name=op.f("fk_ticket_routing_rules_queue_id_ticket_queues"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ticket_routing_rules")),
    )
    op.create_index(
        "ix_ticket_routing_rules_org_position",
        "ticket_routing_rules",
        ["organization_id", "position", "id"],
        unique=False,
    )
    op.create_table(
        "tickets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("priority", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("requester_type", sa.Text(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=True),
        sa.Column("membership_id", sa.Uuid(), nullable=True),
        sa.Column("requester_email", sa.Text(), nullable=True),
        sa.Column("queue_id", sa.Uuid(), nullable=True),
        sa.Column("assignee_user_id", sa.Uuid(), nullable=True),
        sa.Column("routing_rule_id", sa.Uuid(), nullable=True),
        sa.Column("conversation_id", sa.Uuid(), nullable=True),
        sa.Column("previous_ticket_id", sa.Uuid(), nullable=True),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("first_response_target_minutes", sa.Integer(), nullable=False),
        sa.Column("resolution_target_minutes", sa.Integer(), nullable=False),
        sa.Column("first_response_due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("first_response_warn_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("first_responded_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("first_response_seconds", sa.Integer(), nullable=True),
        sa.Column("first_response_breached_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sla_cycle_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolution_elapsed_seconds", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("sla_running_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolution_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolution_warn_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolution_breached_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolution_seconds", sa.Integer(), nullable=True),
        sa.Column("breach_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("escalated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolution", sa.Text(), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("close_reason", sa.Text(), nullable=True),
        sa.Column("reopened_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reopen_reason", sa.Text(), nullable=True),
        sa.Column("reopen_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("channel IN ('email', 'portal', 'phone', 'chat', 'api')", name=op.f("ck_tickets_channel")),
        sa.CheckConstraint("close_reason IN ('confirmed', 'auto_closed')", name=op.f("ck_tickets_close_reason")),
        sa.CheckConstraint("priority IN ('low', 'normal', 'high', 'urgent')", name=op.f("ck_tickets_priority")),
        sa.CheckConstraint("requester_type IN ('member', 'lead', 'unknown')", name=op.f("ck_tickets_requester_type")),
        sa.CheckConstraint(
            "status IN ('new', 'unassigned', 'assigned', 'in_progress', 'escalated', 'awaiting_customer', 'resolved', 'reopened', 'closed')",
            name=op.f("ck_tickets_status"),
        ),
        sa.CheckConstraint("resolution_elapsed_seconds >= 0", name=op.f("ck_tickets_resolution_elapsed_not_negative")),
        sa.CheckConstraint("breach_count >= 0", name=op.f("ck_tickets_breach_count_not_negative")),
        sa.ForeignKeyConstraint(
            ["assignee_user_id"], ["users.id"], name=op.f("fk_tickets_assignee_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"], ["users.id"], name=op.f("fk_tickets_created_by_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(["lead_id"], ["leads.id"], name=op.f("fk_tickets_lead_id_leads"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["membership_id"],
            ["memberships.id"],
            name=op.f("fk_tickets_membership_id_memberships"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_tickets_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["previous_ticket_id"],
            ["tickets.id"],
            name=op.f("fk_tickets_previous_ticket_id_tickets"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["queue_id"], ["ticket_queues.id"], name=op.f("fk_tickets_queue_id_ticket_queues"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["routing_rule_id"],
            ["ticket_routing_rules.id"],
            name=op.f("fk_tickets_routing_rule_id_ticket_routing_rules"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tickets")),
    )
    op.create_index(
        "ix_tickets_org_assignee_id", "tickets", ["organization_id", "assignee_user_id", "id"], unique=False
    )
    op.create_index("ix_tickets_org_created_at", "tickets", ["organization_id", "created_at"], unique=False)
    op.create_index("ix_tickets_org_id", "tickets", ["organization_id", "id"], unique=False)
    op.create_index("ix_tickets_org_lead", "tickets", ["organization_id", "lead_id"], unique=False)
    op.create_index(
        "ix_tickets_org_lower_requester_email",
        "tickets",
        ["organization_id", sa.literal_column("lower(requester_email)")],
        unique=False,
    )
    op.create_index("ix_tickets_org_membership", "tickets", ["organization_id", "membership_id"], unique=False)
    op.create_index("ix_tickets_org_queue_id", "tickets", ["organization_id", "queue_id", "id"], unique=False)
    op.create_index("ix_tickets_org_status_id", "tickets", ["organization_id", "status", "id"], unique=False)
    op.create_index(
        "ix_tickets_sweep_auto_close",
        "tickets",
        ["resolved_at"],
        unique=False,
        postgresql_where=sa.text("status = 'resolved'"),
    )
    op.create_index(
        "ix_tickets_sweep_escalate",
        "tickets",
        ["first_response_warn_at"],
        unique=False,
        postgresql_where=sa.text("status = 'assigned' AND first_responded_at IS NULL AND escalated_at IS NULL"),
    )
    op.create_index(
        "ix_tickets_sweep_first_response_breach",
        "tickets",
        ["first_response_due_at"],
        unique=False,
        postgresql_where=sa.text(
            "first_responded_at IS NULL AND first_response_breached_at IS NULL AND status <> 'closed'"
        ),
    )
    op.create_index(
        "ix_tickets_sweep_resolution_breach",
        "tickets",
        ["resolution_due_at"],
        unique=False,
        postgresql_where=sa.text("resolution_due_at IS NOT NULL AND resolution_breached_at IS NULL"),
    )
    op.create_index("uq_tickets_org_number", "tickets", ["organization_id", "number"], unique=True)
    op.create_table(
        "ticket_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("ticket_id", sa.Uuid(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("from_status", sa.Text(), nullable=True),
        sa.Column("to_status", sa.Text(), nullable=True),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column(
            "payload", postgresql.JSONB(astext_type=Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("occurred_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["actor_user_id"], ["users.id"], name=op.f("fk_ticket_events_actor_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["ticket_id"], ["tickets.id"], name=op.f("fk_ticket_events_ticket_id_tickets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ticket_events")),
    )
    op.create_index(
        "ix_ticket_events_ticket", "ticket_events", ["organization_id", "ticket_id", "occurred_at", "id"], unique=False
    )
    op.create_table(
        "ticket_mails",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("ticket_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), server_default="pending", nullable=False),
        sa.Column("to_address", sa.Text(), nullable=True),
        sa.Column("provider_message_id", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "kind IN ('resolution_confirmation', 'satisfaction_survey')", name=op.f("ck_ticket_mails_kind")
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'sending', 'sent', 'failed', 'skipped')", name=op.f("ck_ticket_mails_status")
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_mails_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["ticket_id"], ["tickets.id"], name=op.f("fk_ticket_mails_ticket_id_tickets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ticket_mails")),
    )
    op.create_index(
        "ix_ticket_mails_org_provider_id",
        "ticket_mails",
        ["organization_id", "provider_message_id"],
        unique=False,
        postgresql_where=sa.text("provider_message_id IS NOT NULL"),
    )
    op.create_index(
        "ix_ticket_mails_pending",
        "ticket_mails",
        ["created_at"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "ix_ticket_mails_ticket", "ticket_mails", ["organization_id", "ticket_id", "created_at"], unique=False
    )
    op.create_table(
        "ticket_messages",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("ticket_id", sa.Uuid(), nullable=False),
        sa.Column("direction", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("external_message_id", sa.Text(), nullable=True),
        sa.Column("in_reply_to", sa.Text(), nullable=True),
        sa.Column("sender_email", sa.Text(), nullable=True),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), server_default="", nullable=False),
        sa.Column("author_user_id", sa.Uuid(), nullable=True),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "channel IN ('email', 'portal', 'phone', 'chat', 'api')", name=op.f("ck_ticket_messages_channel")
        ),
        sa.CheckConstraint("direction IN ('inbound', 'outbound')", name=op.f("ck_ticket_messages_direction")),
        sa.ForeignKeyConstraint(
            ["author_user_id"], ["users.id"], name=op.f("fk_ticket_messages_author_user_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_messages_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["ticket_id"], ["tickets.id"], name=op.f("fk_ticket_messages_ticket_id_tickets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ticket_messages")),
    )
    op.create_index(
        "ix_ticket_messages_ticket", "ticket_messages", ["organization_id", "ticket_id", "occurred_at"], unique=False
    )
    op.create_index(
        "uq_ticket_messages_org_external_id",
        "ticket_messages",
        ["organization_id", "external_message_id"],
        unique=True,
        postgresql_where=sa.text("external_message_id IS NOT NULL"),
    )
    op.create_table(
        "ticket_surveys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("ticket_id", sa.Uuid(), nullable=False),
        sa.Column("token_digest", sa.Text(), nullable=True),
        sa.Column("rating", sa.Integer(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "(rating IS NULL) = (answered_at IS NULL)", name=op.f("ck_ticket_surveys_answered_with_rating")
        ),
        sa.CheckConstraint("rating BETWEEN 1 AND 5", name=op.f("ck_ticket_surveys_rating")),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ticket_surveys_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["ticket_id"], ["tickets.id"], name=op.f("fk_ticket_surveys_ticket_id_tickets"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ticket_surveys")),
        sa.UniqueConstraint("ticket_id", name=op.f("uq_ticket_surveys_ticket_id")),
        sa.UniqueConstraint("token_digest", name=op.f("uq_ticket_surveys_token_digest")),
    )


def downgrade() -> None:
    op.drop_table("ticket_surveys")
    op.drop_index(
        "uq_ticket_messages_org_external_id",
        table_name="ticket_messages",
        postgresql_where=sa.text("external_message_id IS NOT NULL"),
    )
    op.drop_index("ix_ticket_messages_ticket", table_name="ticket_messages")
    op.drop_table("ticket_messages")
    op.drop_index("ix_ticket_mails_ticket", table_name="ticket_mails")
    op.drop_index("ix_ticket_mails_pending", table_name="ticket_mails", postgresql_where=sa.text("status = 'pending'"))
    op.drop_index(
        "ix_ticket_mails_org_provider_id",
        table_name="ticket_mails",
        postgresql_where=sa.text("provider_message_id IS NOT NULL"),
    )
    op.drop_table("ticket_mails")
    op.drop_index("ix_ticket_events_ticket", table_name="ticket_events")
    op.drop_table("ticket_events")
    op.drop_index("uq_tickets_org_number", table_name="tickets")
    op.drop_index(
        "ix_tickets_sweep_resolution_breach",
        table_name="tickets",
        postgresql_where=sa.text("resolution_due_at IS NOT NULL AND resolution_breached_at IS NULL"),
    )
    op.drop_index(
        "ix_tickets_sweep_first_response_breach",
        table_name="tickets",
        postgresql_where=sa.text(
            "first_responded_at IS NULL AND first_response_breached_at IS NULL AND status <> 'closed'"
        ),
    )
    op.drop_index(
        "ix_tickets_sweep_escalate",
        table_name="tickets",
        postgresql_where=sa.text("status = 'assigned' AND first_responded_at IS NULL AND escalated_at IS NULL"),
    )
    op.drop_index("ix_tickets_sweep_auto_close", table_name="tickets", postgresql_where=sa.text("status = 'resolved'"))
    op.drop_index("ix_tickets_org_status_id", table_name="tickets")
    op.drop_index("ix_tickets_org_queue_id", table_name="tickets")
    op.drop_index("ix_tickets_org_membership", table_name="tickets")
    op.drop_index("ix_tickets_org_lower_requester_email", table_name="tickets")
    op.drop_index("ix_tickets_org_lead", table_name="tickets")
    op.drop_index("ix_tickets_org_id", table_name="tickets")
    op.drop_index("ix_tickets_org_created_at", table_name="tickets")
    op.drop_index("ix_tickets_org_assignee_id", table_name="tickets")
    op.drop_table("tickets")
    op.drop_index("ix_ticket_routing_rules_org_position", table_name="ticket_routing_rules")
    op.drop_table("ticket_routing_rules")
    op.drop_table("ticket_sla_policies")
    op.drop_table("ticket_settings")
    op.drop_index("uq_ticket_queues_org_lower_name", table_name="ticket_queues")
    op.drop_table("ticket_queues")
    op.drop_table("ticket_holidays")
