"""The LeadCRM stack: composes the capability constructs and wires them to the functions.

Reading order follows the data flow of DESIGN.md: network and database, the functions, then what
feeds them (queues, events, schedules, the HTTP API, webhooks) and what watches them.
"""

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.config import LeadCrmConfig
from infra.leadcrm_constructs import (
    AlarmTopic,
    Conversations,
    CoreLayer,
    Database,
    DependenciesLayer,
    DomainEvents,
    EmailSending,
    InboundEmail,
    LambdaFunctions,
    LeadCrmApi,
    LeadIngestion,
    Messaging,
    MetaConversions,
    Migrations,
    Network,
    Observability,
    OutboundWebhooks,
    PseudonymKey,
    Schedules,
    WebhookIngress,
)


class LeadCrmStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: LeadCrmConfig, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)

        network = Network(self, "Network")
        core_layer = CoreLayer(self, "CoreLayer")
        dependencies_layer = DependenciesLayer(self, "DependenciesLayer")
        functions = LambdaFunctions(
            self, "Functions", network=network, core_layer=core_layer, dependencies_layer=dependencies_layer
        )

        self.database = Database(
            self,
            "Database",
            network=network,
            clients=functions.database_clients,
            deletion_protection=config.database_deletion_protection,
        )
        messaging = Messaging(
            self,
            "Messaging",
            ingestion_consumer=functions.ingestion,
            # the webhook receiver; graph_fetch the leads it read from Graph; the API queues CSV import
            # jobs and ingestion their continuations
            ingestion_producers=[functions.webhooks, functions.api, functions.ingestion, functions.graph_fetch],
            task_lifecycle_consumer=functions.task_lifecycle,
            graph_fetch_consumer=functions.graph_fetch,
            # leadgen webhooks; ingestion hands on a raw leadgen that reaches it (queued before graph_fetch);
            # the API queues WhatsApp sends and template syncs (Graph is reachable only from graph_fetch)
            graph_fetch_producers=[functions.webhooks, functions.ingestion, functions.api],
        )
        # Migrations before traffic: the trigger runs after the database and before the functions that
        # read it are created or updated (and so before their queues, routes and schedules reach them).
        Migrations(
            self,
            "Migrations",
            handler=functions.migrations,
            database=self.database,
            before=[*functions.database_clients, functions.admin],
        )
        # The operators' admin function writes the directory as the consumers do (infra/admin.py --aws).
        self.database.grant_client(functions.admin)
        InboundEmail(
            self,
            "Email",
            domain=config.inbound_domain,
            queue=messaging.ingestion.queue,
            readers=[functions.ingestion],
        )
        # Every function that mails names the configuration set; SES's events about each mail come back to
        # task_lifecycle (conversations.delivery).
        EmailSending(
            self,
            "EmailSending",
            senders=[functions.api, functions.task_lifecycle],
            events_queue=messaging.task_lifecycle.queue,
            events_dead_letter_queue=messaging.task_lifecycle.dead_letter_queue,
        )
        domain_events = DomainEvents(
            self,
            "DomainEvents",
            publishers=[*functions.database_clients, functions.admin],
            task_lifecycle_queue=messaging.task_lifecycle,
        )
        # Signed deliveries from the VPC to the function outside it; its reports come back on the bus.
        outbound_webhooks = OutboundWebhooks(
            self,
            "OutboundWebhooks",
            sender=functions.webhook_delivery,
            producers=[functions.api, functions.task_lifecycle],
            bus=domain_events.bus,
        )
        Schedules(self, "Schedules", task_lifecycle=functions.task_lifecycle)
        PseudonymKey(self, "PseudonymKey", readers=functions.database_clients)
        functions.task_lifecycle.add_environment("MAIL_FROM", config.mail_from)
        api = LeadCrmApi(self, "Api", handler=functions.api, settings=config.api)
        Conversations(
            self,
            "Conversations",
            inbound_domain=config.inbound_domain,
            mail_from=config.mail_from,
            api=functions.api,
            readers=[functions.ingestion],
            bulk_sender=functions.task_lifecycle,
            public_api_url=api.url,
        )
        # Ticket survey links point at the API (the support address shares the inbound domain above).
        functions.task_lifecycle.add_environment("TICKET_SURVEY_URL", f"{api.url}public/ticket-surveys/")
        webhooks = WebhookIngress(
            self,
            "WebhookIngress",
            receiver=functions.webhooks,
            # a stored body is read by whoever takes its message: graph_fetch (leadgen), ingestion (WhatsApp,
            # and a leadgen it hands on)
            body_readers=[functions.graph_fetch, functions.ingestion],
        )
        LeadIngestion(
            self,
            "LeadIngestion",
            api=functions.api,
            ingestion=functions.ingestion,
            graph_fetch=functions.graph_fetch,
            dashboard_origin=config.api.dashboard_origin,
        )
        # Conversions API for CRM: task_lifecycle queues checked CRM events, meta_events sends them to Meta and
        # queues Meta's answers for ingestion (the lead's timeline).
        meta_conversions = MetaConversions(
            self,
            "MetaConversions",
            sender=functions.meta_events,
            producers=[functions.task_lifecycle],
            results_queue=messaging.ingestion.queue,
        )
        alarm_topic = AlarmTopic(self, "AlarmTopic", subscribers=config.alarm_subscriptions)
        observability = Observability(
            self,
            "Observability",
            topic=alarm_topic,
            functions=functions,
            http_api=api.http_api,
            work_queues=[*messaging.work_queues, meta_conversions.events, outbound_webhooks.delivery],
            database=self.database,
        )

        self.functions = functions
        self.messaging = messaging
        self.domain_events = domain_events

        CfnOutput(self, "ApiUrl", value=api.url, description="HTTP API base URL")
        CfnOutput(self, "WebhookUrl", value=webhooks.url, description="Meta/WhatsApp webhook callback URL")
        CfnOutput(
            self,
            "AdminFunctionName",
            value=functions.admin.function_name,
            description="Operator commands: make admin ARGS=\"… --aws\" invokes it with your IAM credentials",
        )
        CfnOutput(self, "EventBusName", value=domain_events.bus.event_bus_name, description="Domain event bus")
        CfnOutput(self, "AlarmTopicArn", value=alarm_topic.topic.topic_arn, description="Every alarm notifies it")
        if observability.dashboard is not None:
            CfnOutput(
                self,
                "DashboardName",
                value=observability.dashboard.dashboard_name,
                description="The service's CloudWatch dashboard (docs/runbook.md starts there)",
            )
