"""The webhooks function. Lambda imports this package before its handler: the settings are checked here, in the
init phase, so a missing or invalid variable fails the cold start naming each one (webhooks.settings)."""

from leadcrm.platform.environment import at_cold_start
from webhooks import settings

at_cold_start(settings.check)
