"""What the migrations function needs from its environment, checked once at cold start (migrations/__init__.py):
the database only (DATABASE_URL or DB_*, leadcrm.platform.config); it publishes no events."""

from __future__ import annotations

from leadcrm.platform.config import check_settings

REQUIRED = ()


def check() -> None:
    """SettingsError naming every variable that is missing or invalid."""
    check_settings("migrations", event_bus=False, required=REQUIRED)
