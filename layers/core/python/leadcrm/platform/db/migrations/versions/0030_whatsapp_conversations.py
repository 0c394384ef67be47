"""WhatsApp conversations: template fields on messages, WhatsApp delivery statuses, held status events and
the synced message templates.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-05

- conversation_messages gets the template an outbound WhatsApp message was sent with (`template_name`,
  `template_language`, `template_parameters`); its `delivery_status` also takes WhatsApp's `sent`, `read` and
  `failed` (delivered is shared with SES). A message's WhatsApp id (wamid) is `external_message_id` when
  inbound (unique per channel, the existing partial index) and `provider_message_id` when outbound.
- whatsapp_status_events: every status webhook applied, keyed by (wamid, status), so a status that arrives
  before the send recorded its wamid is held and folded in then, and a replay changes nothing.
- whatsapp_templates: an organization's message templates as last synced from its WhatsApp Business account.

Expand-only: new nullable columns, a wider check and new tables.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

OLD_DELIVERY = "delivery_status IN ('delayed', 'delivered', 'rejected', 'bounced', 'complained')"
NEW_DELIVERY = (
    "delivery_status IN ('delayed', 'delivered', 'rejected', 'bounced', 'complained', 'sent', 'read', 'failed')"
)


def _org_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["organization_id"],
        ["organizations.id"],
        name=op.f(f"fk_{table}_organization_id_organizations"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.drop_constraint(op.f("ck_conversation_messages_delivery_status"), "conversation_messages", type_="check")
    op.create_check_constraint(op.f("ck_conversation_messages_delivery_status"), "conversation_messages", NEW_DELIVERY)
    op.add_column("conversation_messages", sa.Column("template_name", sa.Text()))
    op.add_column("conversation_messages", sa.Column("template_language", sa.Text()))
    op.add_column("conversation_messages", sa.Column("template_parameters", JSONB()))
    op.create_table(
        "whatsapp_status_events",
        sa.Column("wamid", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("error", JSONB()),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        _org_fk("whatsapp_status_events"),
        sa.CheckConstraint(
            "status IN ('sent', 'delivered', 'read', 'failed')", name=op.f("ck_whatsapp_status_events_status")
        ),
        sa.PrimaryKeyConstraint("wamid", "status", name=op.f("pk_whatsapp_status_events")),
    )
    op.create_index("ix_whatsapp_status_events_received_at", "whatsapp_status_events", ["received_at"])
    op.create_table(
        "whatsapp_templates",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("business_account_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("language", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("category", sa.Text()),
        sa.Column("components", JSONB(), nullable=False, server_default=sa.text("'[]'::jsonb")),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        _org_fk("whatsapp_templates"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_whatsapp_templates")),
    )
    op.create_index(
        "uq_whatsapp_templates_org_name_language",
        "whatsapp_templates",
        ["organization_id", "name", "language"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("uq_whatsapp_templates_org_name_language", table_name="whatsapp_templates")
    op.drop_table("whatsapp_templates")
    op.drop_index("ix_whatsapp_status_events_received_at", table_name="whatsapp_status_events")
    op.drop_table("whatsapp_status_events")
    op.drop_column("conversation_messages", "template_parameters")
    op.drop_column("conversation_messages", "template_language")
    op.drop_column("conversation_messages", "template_name")
    op.drop_constraint(op.f("ck_conversation_messages_delivery_status"), "conversation_messages", type_="check")
    op.create_check_constraint(op.f("ck_conversation_messages_delivery_status"), "conversation_messages", OLD_DELIVERY)
