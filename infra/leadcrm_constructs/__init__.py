"""One construct per capability of the LeadCRM deployment.

(Named ``leadcrm_constructs`` because ``constructs`` is the CDK base library itself.)
"""

from infra.leadcrm_constructs.alarm_topic import AlarmSubscriptions, AlarmTopic
from infra.leadcrm_constructs.conversations import Conversations
from infra.leadcrm_constructs.core_layer import CoreLayer
from infra.leadcrm_constructs.database import Database
from infra.leadcrm_constructs.dependencies_layer import DependenciesLayer
from infra.leadcrm_constructs.domain_events import DomainEvents
from infra.leadcrm_constructs.email import EmailSending, InboundEmail
from infra.leadcrm_constructs.functions import LambdaFunctions
from infra.leadcrm_constructs.http_api import ApiSettings, LeadCrmApi
from infra.leadcrm_constructs.lead_ingestion import LeadIngestion
from infra.leadcrm_constructs.messaging import Messaging, WorkQueue
from infra.leadcrm_constructs.meta_conversions import MetaConversions
from infra.leadcrm_constructs.migrations import Migrations
from infra.leadcrm_constructs.network import Network
from infra.leadcrm_constructs.observability import Observability
from infra.leadcrm_constructs.outbound_webhooks import OutboundWebhooks
from infra.leadcrm_constructs.pseudonyms import PseudonymKey
from infra.leadcrm_constructs.schedules import Schedules
from infra.leadcrm_constructs.webhook_ingress import WebhookIngress

__all__ = [
    "AlarmSubscriptions",
    "AlarmTopic",
    "ApiSettings",
    "Conversations",
    "CoreLayer",
    "Database",
    "DependenciesLayer",
    "DomainEvents",
    "EmailSending",
    "InboundEmail",
    "LambdaFunctions",
    "LeadCrmApi",
    "LeadIngestion",
    "Messaging",
    "MetaConversions",
    "Migrations",
    "Network",
    "Observability",
    "OutboundWebhooks",
    "PseudonymKey",
    "Schedules",
    "WebhookIngress",
    "WorkQueue",
]
