"""Ingestion's scheduled upkeep (the table of every job is leadcrm.wiring): how long webhook claims are kept."""

from __future__ import annotations

from datetime import timedelta

from leadcrm.ingestion.tables import ingested_events
from leadcrm.platform.retention import Retention

# A claim must outlive every redelivery of its webhook: Meta retries for up to 36 hours, a message lives 14
# days on a queue and its DLQ (a redrive does not renew it), and graph_fetch hands a leadgen on to the
# ingestion queue as a new message with 14 days of its own. 90 days is well past all of it; the
# `retention_cleanup` job deletes older claims (an erased lead's included: no redelivery can bring it back).
CLAIMS_KEPT_FOR = timedelta(days=90)
CLAIMS_RETENTION = Retention(
    ingested_events,
    ingested_events.c.received_at,
    CLAIMS_KEPT_FOR,
    "longer than any redelivery of a webhook can arrive (36 h of Meta retries, 2 × 14 days of queues)",
)
