"""What the API function needs from its environment, checked once at cold start (api/__init__.py).

Typed: the database (DATABASE_URL or DB_*) and the event bus (leadcrm.platform.config). Present: the
variables below. The stack sets each on this function (tests/infra/platform/test_infra_settings.py).
"""

from __future__ import annotations

from leadcrm.platform.config import check_settings
from leadcrm.platform.environment import (
    EMAIL_SIGNING_KEY,
    GRAPH_FETCH_QUEUE_URL,
    INBOUND_EMAIL_DOMAIN,
    INGESTION_QUEUE_URL,
    LEAD_IMPORTS_BUCKET,
    MAIL_FROM,
    PSEUDONYM_KEY,
    SES_CONFIGURATION_SET,
    WEBHOOK_DELIVERY_QUEUE_URL,
)

REQUIRED = (
    INGESTION_QUEUE_URL,
    GRAPH_FETCH_QUEUE_URL,
    LEAD_IMPORTS_BUCKET,
    EMAIL_SIGNING_KEY,
    INBOUND_EMAIL_DOMAIN,
    MAIL_FROM,
    PSEUDONYM_KEY,
    SES_CONFIGURATION_SET,
    WEBHOOK_DELIVERY_QUEUE_URL,
)


def check() -> None:
    """SettingsError naming every variable that is missing or invalid."""
    check_settings("api", required=REQUIRED)
