"""The meta_events function. Lambda imports this package before its handler: the settings are checked here, in the
init phase, so a missing or invalid variable fails the cold start naming each one (meta_events.settings)."""

from leadcrm.platform.environment import at_cold_start
from meta_events import settings

at_cold_start(settings.check)
