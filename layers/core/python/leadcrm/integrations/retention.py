"""How long the outbound webhook delivery log is kept (the `retention_cleanup` job, leadcrm.wiring.RETAINED).

A module of its own, light to import: task_lifecycle loads the wiring (and so this) at cold start.
"""

from __future__ import annotations

from datetime import timedelta

from leadcrm.integrations.tables import webhook_deliveries
from leadcrm.platform.retention import Retention

# 30 days from a delivery's last change; its unique (endpoint, event) key is what stops a redelivered event
# making a second delivery, and no event is redelivered after 14 days (its queue and DLQ).
DELIVERIES_KEPT_FOR = timedelta(days=30)
DELIVERIES_RETENTION = Retention(
    webhook_deliveries,
    webhook_deliveries.c.updated_at,
    DELIVERIES_KEPT_FOR,
    "a month of delivery log; longer than any event can be redelivered",
)
