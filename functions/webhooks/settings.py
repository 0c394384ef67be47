"""What the webhook receiver needs from its environment, checked once at cold start (webhooks/__init__.py).

Presence checks only (leadcrm.platform.environment): this function loads no pydantic. The stack sets each
variable on this function (tests/infra/platform/test_infra_settings.py).
"""

from __future__ import annotations

from leadcrm.platform.environment import (
    GRAPH_FETCH_QUEUE_URL,
    INGESTION_QUEUE_URL,
    WEBHOOK_BODIES_BUCKET,
    Required,
    require,
)

META_SECRET = Required(
    "META_SECRET_ARN",
    "the secret with the Meta app secret and the webhook verify token",
    instead=("META_APP_SECRET", "META_VERIFY_TOKEN"),
)

REQUIRED = (INGESTION_QUEUE_URL, GRAPH_FETCH_QUEUE_URL, WEBHOOK_BODIES_BUCKET, META_SECRET)


def check() -> None:
    """SettingsError naming every variable that is missing."""
    require("webhooks", REQUIRED)
