"""What the admin function needs from its environment, checked once at cold start (admin/__init__.py): the
database (DATABASE_URL or DB_*) and the event bus, as the consumers it writes through (leadcrm.platform.config)."""

from __future__ import annotations

from leadcrm.platform.config import check_settings

REQUIRED = ()


def check() -> None:
    """SettingsError naming every variable that is missing or invalid."""
    check_settings("admin", required=REQUIRED)
