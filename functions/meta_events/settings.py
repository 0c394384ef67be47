"""What meta_events needs from its environment, checked once at cold start (meta_events/__init__.py).

Presence checks only (leadcrm.platform.environment): this function loads no pydantic. INTEGRATION_SECRET_PREFIX
and META_GRAPH_BASE_URL have defaults. The stack sets each variable below on this function
(tests/infra/platform/test_infra_settings.py).
"""

from __future__ import annotations

from leadcrm.platform.environment import INGESTION_QUEUE_URL, require

REQUIRED = (INGESTION_QUEUE_URL,)


def check() -> None:
    """SettingsError naming every variable that is missing."""
    require("meta_events", REQUIRED)
