"""What webhook_delivery needs from its environment, checked once at cold start (webhook_delivery/__init__.py).

Presence checks only (leadcrm.platform.environment): this function loads no pydantic. The stack sets each
variable below (tests/infra/platform/test_infra_settings.py). `WEBHOOK_ALLOW_PRIVATE_HOSTS` is optional and
unset in AWS (the local stack and tests allow 127.0.0.1).
"""

from __future__ import annotations

from leadcrm.platform.environment import Required, require

EVENT_BUS_NAME = Required("EVENT_BUS_NAME", "the bus each attempt's result is reported on")
REQUIRED = (EVENT_BUS_NAME,)


def check() -> None:
    """SettingsError naming every variable that is missing."""
    require("webhook_delivery", REQUIRED)
