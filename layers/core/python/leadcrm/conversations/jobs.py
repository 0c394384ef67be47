"""Conversations' scheduled upkeep (the table of every job is leadcrm.wiring): how long the SES events and
WhatsApp statuses applied are remembered (the bulk email and queued mail jobs keep their own names: bulk_email.py,
queued_sweep.py)."""

from __future__ import annotations

from datetime import timedelta

from leadcrm.conversations.tables import ses_delivery_events, whatsapp_status_events
from leadcrm.platform.retention import Retention

# The consumer's dedup rows must outlive every redelivery of their event: EventBridge retries a target for
# up to 24 hours, and a message lives 14 days on the task_lifecycle queue and its DLQ (a redrive does not
# renew it). After 30 days no copy of the event can arrive; the mail keeps what the event said
# (delivery_status) and the consent ledger keeps the suppression, so nothing else is lost.
APPLIED_EVENTS_KEPT_FOR = timedelta(days=30)
APPLIED_EVENTS_RETENTION = Retention(
    ses_delivery_events,
    ses_delivery_events.c.received_at,
    APPLIED_EVENTS_KEPT_FOR,
    "longer than any redelivery of an SES event can arrive (24 h of EventBridge retries, 14 days of queues)",
)

# WhatsApp status webhooks kept once per (wamid, status) (conversations.whatsapp): a status is applied to its
# message when it arrives or when the send's wamid is recorded, and never moves it backwards, so a row is
# needed only while a redelivery or a late send answer may still come: Meta retries a webhook for up to 7
# days, and a queue keeps a message 14. The message keeps what the statuses said (delivery_status).
WHATSAPP_STATUSES_KEPT_FOR = timedelta(days=30)
WHATSAPP_STATUSES_RETENTION = Retention(
    whatsapp_status_events,
    whatsapp_status_events.c.received_at,
    WHATSAPP_STATUSES_KEPT_FOR,
    "longer than Meta's webhook retries (7 days) and a queued send answer (14 days) can arrive",
)
