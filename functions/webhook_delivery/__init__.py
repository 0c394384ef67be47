"""The webhook_delivery function. Lambda imports this package before its handler: the settings are checked here, in
the init phase, so a missing variable fails the cold start naming it (webhook_delivery.settings)."""

from leadcrm.platform.environment import at_cold_start
from webhook_delivery import settings

at_cold_start(settings.check)
