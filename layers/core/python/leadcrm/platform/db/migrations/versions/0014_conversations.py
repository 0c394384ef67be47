"""conversations: Conversations, messages, the consent ledger and bulk email (issue 7).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29

New tables only, plus two nullable columns (lead_consents.legal_basis, memberships.notification_prefs): catalog
changes, no table rewrite.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "bulk_email_jobs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("audience", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("status", sa.Text(), server_default="queued", nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("status IN ('queued', 'sending', 'done')", name=op.f("ck_bulk_email_jobs_status")),
        sa.ForeignKeyConstraint(
            ["created_by_user_id"],
            ["users.id"],
            name=op.f("fk_bulk_email_jobs_created_by_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_bulk_email_jobs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bulk_email_jobs")),
    )
    op.create_index(
        "ix_bulk_email_jobs_org_created", "bulk_email_jobs", ["organization_id", "created_at", "id"], unique=False
    )
    op.create_index(
        "ix_bulk_email_jobs_unfinished",
        "bulk_email_jobs",
        ["created_at"],
        unique=False,
        postgresql_where=sa.text("status <> 'done'"),
    )
    op.create_table(
        "bulk_email_recipients",
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.Text(), server_default="pending", nullable=False),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("provider_message_id", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'sending', 'sent', 'failed', 'skipped')",
            name=op.f("ck_bulk_email_recipients_status"),
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["bulk_email_jobs.id"],
            name=op.f("fk_bulk_email_recipients_job_id_bulk_email_jobs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_bulk_email_recipients_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_bulk_email_recipients_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "lead_id", name="pk_bulk_email_recipients"),
    )
    op.create_index(
        "ix_bulk_email_recipients_pending",
        "bulk_email_recipients",
        ["job_id", "lead_id"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_table(
        "conversations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("contact_key", sa.Text(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=True),
        sa.Column("membership_id", sa.Uuid(), nullable=True),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), server_default="open", nullable=False),
        sa.Column("unread_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("assigned_to_user_id", sa.Uuid(), nullable=True),
        sa.Column("last_message_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("channel IN ('email', 'sms', 'whatsapp')", name=op.f("ck_conversations_channel")),
        sa.CheckConstraint("status IN ('open', 'closed')", name=op.f("ck_conversations_status")),
        sa.CheckConstraint("(lead_id IS NULL) <> (membership_id IS NULL)", name=op.f("ck_conversations_one_contact")),
        sa.CheckConstraint("unread_count >= 0", name=op.f("ck_conversations_unread_count_not_negative")),
        sa.ForeignKeyConstraint(
            ["assigned_to_user_id"],
            ["users.id"],
            name=op.f("fk_conversations_assigned_to_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_conversations_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["membership_id"],
            ["memberships.id"],
            name=op.f("fk_conversations_membership_id_memberships"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_conversations_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
    )
    op.create_index(
        "ix_conversations_org_last_message", "conversations", ["organization_id", "last_message_at", "id"], unique=False
    )
    op.create_index(
        "ix_conversations_org_lead",
        "conversations",
        ["organization_id", "lead_id"],
        unique=False,
        postgresql_where=sa.text("lead_id IS NOT NULL"),
    )
    op.create_index(
        "uq_conversations_org_channel_contact",
        "conversations",
        ["organization_id", "channel", "contact_key"],
        unique=True,
    )
    op.create_table(
        "lead_consent_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("lead_id", sa.Uuid(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("legal_basis", sa.Text(), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("actor_user_id", sa.Uuid(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("occurred_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "channel IN ('email', 'sms', 'whatsapp', 'call')", name=op.f("ck_lead_consent_events_channel")
        ),
        sa.CheckConstraint(
            "legal_basis IN ('consent', 'legitimate_interest', 'contract', 'legal_obligation')",
            name=op.f("ck_lead_consent_events_legal_basis"),
        ),
        sa.CheckConstraint(
            "status = 'revoked' OR legal_basis IS NOT NULL", name=op.f("ck_lead_consent_events_grant_has_basis")
        ),
        sa.CheckConstraint("status IN ('granted', 'revoked')", name=op.f("ck_lead_consent_events_status")),
        sa.ForeignKeyConstraint(
            ["actor_user_id"],
            ["users.id"],
            name=op.f("fk_lead_consent_events_actor_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_lead_consent_events_lead_id_leads"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lead_consent_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lead_consent_events")),
    )
    op.create_index(
        "ix_lead_consent_events_org_lead",
        "lead_consent_events",
        ["organization_id", "lead_id", "occurred_at"],
        unique=False,
    )
    op.create_table(
        "conversation_messages",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("direction", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("author_user_id", sa.Uuid(), nullable=True),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("from_address", sa.Text(), nullable=True),
        sa.Column("to_address", sa.Text(), nullable=True),
        sa.Column("provider_message_id", sa.Text(), nullable=True),
        sa.Column("external_message_id", sa.Text(), nullable=True),
        sa.Column("in_reply_to", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("channel IN ('email', 'sms', 'whatsapp')", name=op.f("ck_conversation_messages_channel")),
        sa.CheckConstraint(
            "direction IN ('inbound', 'outbound', 'note')", name=op.f("ck_conversation_messages_direction")
        ),
        sa.CheckConstraint(
            "status IN ('queued', 'sent', 'failed', 'received', 'note')", name=op.f("ck_conversation_messages_status")
        ),
        sa.ForeignKeyConstraint(
            ["author_user_id"],
            ["users.id"],
            name=op.f("fk_conversation_messages_author_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_conversation_messages_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversation_messages")),
    )
    op.create_index(
        "ix_conversation_messages_conversation_created",
        "conversation_messages",
        ["conversation_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        "uq_conversation_messages_inbound_external_id",
        "conversation_messages",
        ["channel", "external_message_id"],
        unique=True,
        postgresql_where=sa.text("direction = 'inbound' AND external_message_id IS NOT NULL"),
    )
    op.add_column("lead_consents", sa.Column("legal_basis", sa.Text(), nullable=True))
    op.add_column(
        "memberships", sa.Column("notification_prefs", postgresql.JSONB(astext_type=sa.Text()), nullable=True)
    )
    # The ledger starts from the current state issue 5 wrote (dnc revocations), so history is complete.
    op.execute(
        """
        INSERT INTO lead_consent_events (id, organization_id, lead_id, channel, status, legal_basis, source, occurred_at)
        SELECT id, organization_id, lead_id, channel, status,
               CASE WHEN status = 'granted' THEN 'consent' END, source, updated_at
        FROM lead_consents
        """
    )
    # Append-only: a ledger row is never changed (an erase deletes the lead's rows with the lead).
    op.execute(
        """
        CREATE FUNCTION lead_consent_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION 'lead_consent_events is append-only';
        END $$
        """
    )
    op.execute(
        "CREATE TRIGGER lead_consent_events_no_update BEFORE UPDATE ON lead_consent_events "
        "FOR EACH ROW EXECUTE FUNCTION lead_consent_events_append_only()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS lead_consent_events_no_update ON lead_consent_events")
    op.execute("DROP FUNCTION IF EXISTS lead_consent_events_append_only()")
    op.drop_column("memberships", "notification_prefs")
    op.drop_column("lead_consents", "legal_basis")
    op.drop_index(
        "uq_conversation_messages_inbound_external_id",
        table_name="conversation_messages",
        postgresql_where=sa.text("direction = 'inbound' AND external_message_id IS NOT NULL"),
    )
    op.drop_index("ix_conversation_messages_conversation_created", table_name="conversation_messages")
    op.drop_table("conversation_messages")
    op.drop_index("ix_lead_consent_events_org_lead", table_name="lead_consent_events")
    op.drop_table("lead_consent_events")
    op.drop_index("uq_conversations_org_channel_contact", table_name="conversations")
    op.drop_index(
        "ix_conversations_org_lead", table_name="conversations", postgresql_where=sa.text("lead_id IS NOT NULL")
    )
    op.drop_index("ix_conversations_org_last_message", table_name="conversations")
    op.drop_table("conversations")
    op.drop_index(
        "ix_bulk_email_recipients_pending",
        table_name="bulk_email_recipients",
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.drop_table("bulk_email_recipients")
    op.drop_index(
        "ix_bulk_email_jobs_unfinished", table_name="bulk_email_jobs", postgresql_where=sa.text("status <> 'done'")
    )
    op.drop_index("ix_bulk_email_jobs_org_created", table_name="bulk_email_jobs")
    op.drop_table("bulk_email_jobs")
