"""What task_lifecycle needs from its environment, checked once at cold start (task_lifecycle/__init__.py).

Typed: the database (DATABASE_URL or DB_*) and the event bus (leadcrm.platform.config). Present: the
variables below. The stack sets each on this function (tests/infra/platform/test_infra_settings.py).
"""

from __future__ import annotations

from leadcrm.platform.config import check_settings
from leadcrm.platform.environment import (
    EMAIL_SIGNING_KEY,
    INBOUND_EMAIL_DOMAIN,
    MAIL_FROM,
    PSEUDONYM_KEY,
    SES_CONFIGURATION_SET,
    WEBHOOK_DELIVERY_QUEUE_URL,
    Required,
)

PUBLIC_API_URL = Required("PUBLIC_API_URL", "the base URL of the unsubscribe links in bulk mail")
TICKET_SURVEY_URL = Required("TICKET_SURVEY_URL", "the base URL of the ticket survey links")

REQUIRED = (
    EMAIL_SIGNING_KEY,
    INBOUND_EMAIL_DOMAIN,
    MAIL_FROM,
    PSEUDONYM_KEY,
    SES_CONFIGURATION_SET,
    PUBLIC_API_URL,
    TICKET_SURVEY_URL,
    WEBHOOK_DELIVERY_QUEUE_URL,
)


def check() -> None:
    """SettingsError naming every variable that is missing or invalid."""
    check_settings("task_lifecycle", required=REQUIRED)
