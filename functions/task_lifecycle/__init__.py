"""The task_lifecycle function. Lambda imports this package before its handler: the settings are checked here, in the
init phase, so a missing or invalid variable fails the cold start naming each one (task_lifecycle.settings)."""

from leadcrm.platform.environment import at_cold_start
from task_lifecycle import settings

at_cold_start(settings.check)
