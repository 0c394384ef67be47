"""SES events: delivery status on sent mail, suppression bases, bulk pauses, and the send claim.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04

- conversation_messages and bulk_email_recipients get what SES said after it took the mail
  (`delivery_status` delivered / bounced / complained / rejected / delayed, when, and the event's types,
  never an address or diagnostic text) and a status `unknown`: a send that died after it may have reached
  SES, never re-sent. conversation_messages also gets its send claim (`send_attempts`, `send_claimed_at`),
  committed just before SES is called, so the queued sweep can tell a message SES never saw (retried once)
  from one it may have (unknown).
- bulk_email_jobs may be `paused` (a bounce rate past the threshold), with when, why and the figures.
- lead_consent_events accepts the legal bases `bounce` and `complaint` (a suppression says why).
- ses_delivery_events: one row per SES event applied, keyed by SES's message id, event type and the
  event's own timestamp, so a replayed event changes nothing.

Expand-only: new nullable columns and wider checks, safe for the code already running.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

DELIVERY = "delivery_status IN ('delayed', 'delivered', 'rejected', 'bounced', 'complained')"
CHECKS = {
    # (table, constraint): (new, old)
    ("conversation_messages", "status"): (
        "status IN ('queued', 'sent', 'failed', 'unknown', 'received', 'note')",
        "status IN ('queued', 'sent', 'failed', 'received', 'note')",
    ),
    ("bulk_email_recipients", "status"): (
        "status IN ('pending', 'sending', 'sent', 'failed', 'unknown', 'skipped')",
        "status IN ('pending', 'sending', 'sent', 'failed', 'skipped')",
    ),
    ("bulk_email_jobs", "status"): (
        "status IN ('queued', 'sending', 'paused', 'done')",
        "status IN ('queued', 'sending', 'done')",
    ),
    ("lead_consent_events", "legal_basis"): (
        "legal_basis IN ('consent', 'legitimate_interest', 'contract', 'legal_obligation', 'bounce', 'complaint')",
        "legal_basis IN ('consent', 'legitimate_interest', 'contract', 'legal_obligation')",
    ),
}


def _replace_checks(use_new: bool) -> None:
    for (table, name), (new, old) in CHECKS.items():
        op.drop_constraint(op.f(f"ck_{table}_{name}"), table, type_="check")
        op.create_check_constraint(op.f(f"ck_{table}_{name}"), table, new if use_new else old)


def _delivery_columns(table: str) -> None:
    op.add_column(table, sa.Column("delivery_status", sa.Text()))
    op.add_column(table, sa.Column("delivery_status_at", sa.DateTime(timezone=True)))
    op.add_column(table, sa.Column("delivery_detail", JSONB()))
    op.create_check_constraint(op.f(f"ck_{table}_delivery_status"), table, DELIVERY)


def upgrade() -> None:
    _replace_checks(use_new=True)
    _delivery_columns("conversation_messages")
    _delivery_columns("bulk_email_recipients")
    op.add_column(
        "conversation_messages", sa.Column("send_attempts", sa.SmallInteger(), nullable=False, server_default="0")
    )
    op.add_column("conversation_messages", sa.Column("send_claimed_at", sa.DateTime(timezone=True)))
    op.add_column("bulk_email_jobs", sa.Column("paused_at", sa.DateTime(timezone=True)))
    op.add_column("bulk_email_jobs", sa.Column("pause_reason", sa.Text()))
    op.add_column("bulk_email_jobs", sa.Column("pause_detail", JSONB()))
    # An SES event without our tag (mail sent before tags) finds its row by SES's id.
    op.create_index(
        "ix_conversation_messages_provider_message_id",
        "conversation_messages",
        ["provider_message_id"],
        postgresql_where=sa.text("provider_message_id IS NOT NULL"),
    )
    op.create_index(
        "ix_bulk_email_recipients_provider_message_id",
        "bulk_email_recipients",
        ["provider_message_id"],
        postgresql_where=sa.text("provider_message_id IS NOT NULL"),
    )
    # The queued sweep reads only the few outbound messages still queued.
    op.create_index(
        "ix_conversation_messages_queued",
        "conversation_messages",
        ["created_at"],
        postgresql_where=sa.text("status = 'queued'"),
    )
    op.create_table(
        "ses_delivery_events",
        sa.Column("ses_message_id", sa.Text(), nullable=False),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_ses_delivery_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("ses_message_id", "event_type", "occurred_at", name=op.f("pk_ses_delivery_events")),
    )
    op.create_index("ix_ses_delivery_events_received_at", "ses_delivery_events", ["received_at"])


def downgrade() -> None:
    op.drop_index("ix_ses_delivery_events_received_at", table_name="ses_delivery_events")
    op.drop_table("ses_delivery_events")
    op.drop_index(
        "ix_conversation_messages_queued",
        table_name="conversation_messages",
        postgresql_where=sa.text("status = 'queued'"),
    )
    op.drop_index(
        "ix_bulk_email_recipients_provider_message_id",
        table_name="bulk_email_recipients",
        postgresql_where=sa.text("provider_message_id IS NOT NULL"),
    )
    op.drop_index(
        "ix_conversation_messages_provider_message_id",
        table_name="conversation_messages",
        postgresql_where=sa.text("provider_message_id IS NOT NULL"),
    )
    op.drop_column("bulk_email_jobs", "pause_detail")
    op.drop_column("bulk_email_jobs", "pause_reason")
    op.drop_column("bulk_email_jobs", "paused_at")
    op.drop_column("conversation_messages", "send_claimed_at")
    op.drop_column("conversation_messages", "send_attempts")
    for table in ("bulk_email_recipients", "conversation_messages"):
        op.drop_constraint(op.f(f"ck_{table}_delivery_status"), table, type_="check")
        for column in ("delivery_detail", "delivery_status_at", "delivery_status"):
            op.drop_column(table, column)
    # Rows the new values describe cannot stay under the old checks: they go back to what they were before.
    op.execute("UPDATE conversation_messages SET status = 'failed' WHERE status = 'unknown'")
    op.execute("UPDATE bulk_email_recipients SET status = 'failed' WHERE status = 'unknown'")
    op.execute("UPDATE bulk_email_jobs SET status = 'sending' WHERE status = 'paused'")
    op.execute("DELETE FROM lead_consent_events WHERE legal_basis IN ('bounce', 'complaint')")
    _replace_checks(use_new=False)
