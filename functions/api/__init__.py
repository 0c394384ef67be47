"""The api function. Lambda imports this package before its handler: the settings are checked here, in the
init phase, so a missing or invalid variable fails the cold start naming each one (api.settings)."""

from api import settings
from leadcrm.platform.environment import at_cold_start

at_cold_start(settings.check)
