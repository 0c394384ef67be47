"""The conversations tables (SQLAlchemy Core), on the one shared MetaData of leadcrm.platform.db.columns."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    SmallInteger,
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

CONSENT_CHANNELS = ("email", "sms", "whatsapp", "call")

CONSENT_STATUSES = ("granted", "revoked")

# A lead's current consent per channel (conversations.consent), kept in step with the append-only ledger
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

CONVERSATION_CHANNELS = ("email", "sms", "whatsapp")

CONVERSATION_STATUSES = ("open", "closed")

MESSAGE_DIRECTIONS = ("inbound", "outbound", "note")

# queued → sent | failed for outbound mail (unknown: the send died after it may have reached SES, never
# re-sent); received for inbound; note for internal notes.
MESSAGE_STATUSES = ("queued", "sent", "failed", "unknown", "received", "note")

# What SES said after it took a mail (conversations.rules.delivery.DeliveryStatus), on messages and recipients;
# a WhatsApp message's status webhooks (conversations.rules.whatsapp.WhatsAppStatus) add sent, read, failed.
DELIVERY_STATUSES = ("delayed", "delivered", "rejected", "bounced", "complained")
MESSAGE_DELIVERY_STATUSES = (*DELIVERY_STATUSES, "sent", "read", "failed")
WHATSAPP_STATUSES = ("sent", "delivered", "read", "failed")

# `bounce` and `complaint`: a suppression SES reported (conversations.delivery), never a staff choice.
LEGAL_BASES = ("consent", "legitimate_interest", "contract", "legal_obligation", "bounce", "complaint")

BULK_JOB_STATUSES = ("queued", "sending", "paused", "done")

BULK_RECIPIENT_STATUSES = ("pending", "sending", "sent", "failed", "unknown", "skipped")


def delivery_columns() -> list[Column]:
    """The delivery status SES reported, when (the event's own time), and its types (no address, no text)."""
    return [
        Column("delivery_status", Text),
        Column("delivery_status_at", DateTime(timezone=True)),
        Column("delivery_detail", JSONB),
    ]


# One thread per (organization, channel, contact): contact_key is `lead:<id>` or `member:<membership id>`,
# the spec's externalContactId, so a find-or-create is one INSERT … ON CONFLICT on it.
conversations = Table(
    "conversations",
    metadata,
    id_column(),
    org_column(),
    Column("channel", Text, nullable=False),
    Column("contact_key", Text, nullable=False),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE")),
    Column("membership_id", Uuid, ForeignKey("memberships.id", ondelete="CASCADE")),
    # Stored by the first outbound message and reused as "Re: …" after it.
    Column("subject", Text),
    Column("status", Text, nullable=False, server_default="open"),
    Column("unread_count", Integer, nullable=False, server_default=text("0")),
    Column("assigned_to_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    stamp_column("last_message_at"),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("channel", CONVERSATION_CHANNELS), name="channel"),
    CheckConstraint(one_of("status", CONVERSATION_STATUSES), name="status"),
    CheckConstraint("unread_count >= 0", name="unread_count_not_negative"),
    CheckConstraint("(lead_id IS NULL) <> (membership_id IS NULL)", name="one_contact"),
    Index("uq_conversations_org_channel_contact", "organization_id", "channel", "contact_key", unique=True),
    # The inbox: newest activity first, keyset on (last_message_at, id).
    Index("ix_conversations_org_last_message", "organization_id", "last_message_at", "id"),
    Index("ix_conversations_org_lead", "organization_id", "lead_id", postgresql_where=text("lead_id IS NOT NULL")),
)

conversation_messages = Table(
    "conversation_messages",
    metadata,
    id_column(),
    org_column(),
    Column("conversation_id", Uuid, ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
    Column("direction", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("author_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("subject", Text),
    Column("body", Text, nullable=False),
    Column("from_address", Text),
    Column("to_address", Text),
    # The provider's id of an outbound message (SES MessageId).
    Column("provider_message_id", Text),
    # The RFC 5322 Message-ID of an inbound message: what recordInbound deduplicates on, and what the next
    # outbound message's In-Reply-To/References name.
    Column("external_message_id", Text),
    Column("in_reply_to", Text),
    Column("error", Text),
    Column("sent_at", DateTime(timezone=True)),
    *delivery_columns(),
    # The send claim, committed just before SES is called (conversations.sending): a queued message with
    # no attempt never reached SES and may be retried once; one with an attempt may have, and is not.
    Column("send_attempts", SmallInteger, nullable=False, server_default=text("0")),
    Column("send_claimed_at", DateTime(timezone=True)),
    # An outbound WhatsApp message sent as an approved template (outside the 24-hour window): its name,
    # language and body parameters; `body` holds the text the template renders to.
    Column("template_name", Text),
    Column("template_language", Text),
    Column("template_parameters", JSONB),
    created_at_column(),
    CheckConstraint(one_of("direction", MESSAGE_DIRECTIONS), name="direction"),
    CheckConstraint(one_of("channel", CONVERSATION_CHANNELS), name="channel"),
    CheckConstraint(one_of("status", MESSAGE_STATUSES), name="status"),
    CheckConstraint(one_of("delivery_status", MESSAGE_DELIVERY_STATUSES), name="delivery_status"),
    Index("ix_conversation_messages_conversation_created", "conversation_id", "created_at", "id"),
    Index(
        "ix_conversation_messages_provider_message_id",
        "provider_message_id",
        postgresql_where=text("provider_message_id IS NOT NULL"),
    ),
    Index("ix_conversation_messages_queued", "created_at", postgresql_where=text("status = 'queued'")),
    Index(
        "uq_conversation_messages_inbound_external_id",
        "channel",
        "external_message_id",
        unique=True,
        postgresql_where=text("direction = 'inbound' AND external_message_id IS NOT NULL"),
    ),
)

# The consent ledger: every grant and revocation, never updated (a trigger refuses UPDATE; an erase deletes
# the lead's rows with it). lead_consents holds the current state the gate reads.
lead_consent_events = Table(
    "lead_consent_events",
    metadata,
    id_column(),
    org_column(),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    Column("channel", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("legal_basis", Text),
    Column("source", Text, nullable=False),
    Column("actor_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("note", Text),
    stamp_column("occurred_at"),
    CheckConstraint(one_of("channel", CONSENT_CHANNELS), name="channel"),
    CheckConstraint(one_of("status", CONSENT_STATUSES), name="status"),
    CheckConstraint(one_of("legal_basis", LEGAL_BASES), name="legal_basis"),
    CheckConstraint("status = 'revoked' OR legal_basis IS NOT NULL", name="grant_has_basis"),
    Index("ix_lead_consent_events_org_lead", "organization_id", "lead_id", "occurred_at"),
)

# A bulk send (spec "Bulk email is broadcast-on-send"): the audience is resolved into recipient rows when the
# job is created; the `bulk_email` scheduled job sends the pending ones within the SES sending rate.
bulk_email_jobs = Table(
    "bulk_email_jobs",
    metadata,
    id_column(),
    org_column(),
    Column("created_by_user_id", Uuid, ForeignKey("users.id", ondelete="SET NULL")),
    Column("subject", Text, nullable=False),
    Column("body", Text, nullable=False),
    # What was asked for (ids and filters only), kept to explain the job.
    Column("audience", JSONB, nullable=False),
    Column("status", Text, nullable=False, server_default="queued"),
    Column("completed_at", DateTime(timezone=True)),
    # A job pauses itself (conversations.delivery): `bounce_rate`, with the figures that passed the threshold.
    Column("paused_at", DateTime(timezone=True)),
    Column("pause_reason", Text),
    Column("pause_detail", JSONB),
    created_at_column(),
    updated_at_column(),
    CheckConstraint(one_of("status", BULK_JOB_STATUSES), name="status"),
    Index("ix_bulk_email_jobs_org_created", "organization_id", "created_at", "id"),
    Index("ix_bulk_email_jobs_unfinished", "created_at", postgresql_where=text("status <> 'done'")),
)

bulk_email_recipients = Table(
    "bulk_email_recipients",
    metadata,
    Column("job_id", Uuid, ForeignKey("bulk_email_jobs.id", ondelete="CASCADE"), nullable=False),
    Column("lead_id", Uuid, ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    org_column(),
    Column("status", Text, nullable=False, server_default="pending"),
    # Why a lead was skipped: no_consent, no_email.
    Column("skip_reason", Text),
    # When a run claimed it (status sending): a claim older than the lease is a run that died mid-send.
    Column("claimed_at", DateTime(timezone=True)),
    Column("provider_message_id", Text),
    Column("error", Text),
    Column("sent_at", DateTime(timezone=True)),
    *delivery_columns(),
    CheckConstraint(one_of("status", BULK_RECIPIENT_STATUSES), name="status"),
    CheckConstraint(one_of("delivery_status", DELIVERY_STATUSES), name="delivery_status"),
    PrimaryKeyConstraint("job_id", "lead_id", name="pk_bulk_email_recipients"),
    Index("ix_bulk_email_recipients_pending", "job_id", "lead_id", postgresql_where=text("status = 'pending'")),
    Index(
        "ix_bulk_email_recipients_provider_message_id",
        "provider_message_id",
        postgresql_where=text("provider_message_id IS NOT NULL"),
    ),
)

# The SES events applied (conversations.delivery), one row each, in the event's transaction: the key is SES's
# message id, the event type and the event's own timestamp, so a redelivered or replayed event is a no-op.
ses_delivery_events = Table(
    "ses_delivery_events",
    metadata,
    Column("ses_message_id", Text, nullable=False),
    Column("event_type", Text, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    org_column(),
    stamp_column("received_at"),
    PrimaryKeyConstraint("ses_message_id", "event_type", "occurred_at", name="pk_ses_delivery_events"),
    Index("ix_ses_delivery_events_received_at", "received_at"),
)

# WhatsApp status webhooks applied (conversations.whatsapp), one row per (wamid, status): a replay changes
# nothing, and a status that arrives before the send recorded its wamid is held here and folded in then.
whatsapp_status_events = Table(
    "whatsapp_status_events",
    metadata,
    Column("wamid", Text, nullable=False),
    Column("status", Text, nullable=False),
    org_column(),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    # A failed status's errors as WhatsApp sent them (code, title, message, details): no message text.
    Column("error", JSONB),
    stamp_column("received_at"),
    CheckConstraint(one_of("status", WHATSAPP_STATUSES), name="status"),
    PrimaryKeyConstraint("wamid", "status", name="pk_whatsapp_status_events"),
    Index("ix_whatsapp_status_events_received_at", "received_at"),
)

# An organization's WhatsApp message templates as last synced from its WhatsApp Business account (the
# templates sync): what staff pick from outside the 24-hour customer-service window.
whatsapp_templates = Table(
    "whatsapp_templates",
    metadata,
    id_column(),
    org_column(),
    Column("business_account_id", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("language", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("category", Text),
    Column("components", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    stamp_column("synced_at"),
    Index("uq_whatsapp_templates_org_name_language", "organization_id", "name", "language", unique=True),
)
