"""Functions: the nine Lambda functions, built from one code asset rooted at ``functions/``.

Every function gets the same runtime, architecture, layers (core, dependencies: their files do not
overlap), tracing, log retention and Powertools settings; only the handler, size and network placement
differ (``FUNCTION_SPECS``). The constructs of the other capabilities wire themselves to these
functions: each one grants its own permissions and sets the environment variables that point at its
resources, so a capability can be read (and later removed) in one file. Each function checks the
variables it needs when it starts (functions/<name>/settings.py; tests/infra/platform/test_infra_settings.py
holds each list to what the stack sets). The variables the code reads, and who sets them:

- all nine: ``POWERTOOLS_SERVICE_NAME``, ``POWERTOOLS_METRICS_NAMESPACE``, ``LOG_LEVEL`` and
  ``POWERTOOLS_TRACER_CAPTURE_RESPONSE`` / ``_ERROR`` off (this construct): a traced function's return value
  or error message can hold PII, and traces, like logs, carry ids only (leadcrm.platform.telemetry);
- api, ingestion, task_lifecycle: ``DB_AUTH_MODE``, ``DB_HOST``, ``DB_PORT``, ``DB_NAME``, ``DB_USER``,
  ``DB_SECRET_ARN`` (``Database``) and ``EVENT_BUS_NAME`` (``DomainEvents``);
- webhooks: ``INGESTION_QUEUE_URL``, ``GRAPH_FETCH_QUEUE_URL`` (``Messaging``) and ``META_SECRET_ARN``
  (``WebhookIngress``);
- api: also ``INGESTION_QUEUE_URL`` and ``GRAPH_FETCH_QUEUE_URL`` (``Messaging``: CSV imports, WhatsApp sends);
- graph_fetch: ``INGESTION_QUEUE_URL`` (``Messaging``) and ``INTEGRATION_SECRET_PREFIX`` (``LeadIngestion``);
  ``META_GRAPH_BASE_URL`` is left to its default (the Graph API);
- meta_events: ``INGESTION_QUEUE_URL`` and ``INTEGRATION_SECRET_PREFIX`` (``MetaConversions``);
  ``META_GRAPH_BASE_URL`` is left to its default;
- webhook_delivery: ``EVENT_BUS_NAME`` (``OutboundWebhooks``: it reports each attempt on the bus);
- api, task_lifecycle: ``WEBHOOK_DELIVERY_QUEUE_URL`` (``OutboundWebhooks``); task_lifecycle also
  ``META_EVENTS_QUEUE_URL`` (``MetaConversions``);
- migrations: the ``DB_*`` settings (``Database``, through ``Migrations``) and ``MIGRATIONS_HASH``;
- admin: the ``DB_*`` settings and ``EVENT_BUS_NAME`` (the stack grants them: it writes as the consumers do).
"""

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from cdk_nag import NagSuppressions
from constructs import Construct

from infra.leadcrm_constructs._paths import ASSET_EXCLUDES, FUNCTIONS_DIR
from infra.leadcrm_constructs.core_layer import ARCHITECTURE, RUNTIME, CoreLayer
from infra.leadcrm_constructs.dependencies_layer import DependenciesLayer
from infra.leadcrm_constructs.network import Network

POWERTOOLS_ENVIRONMENT = {
    "POWERTOOLS_SERVICE_NAME": "leadcrm",
    "POWERTOOLS_METRICS_NAMESPACE": "LeadCRM",
    "LOG_LEVEL": "INFO",
    "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
    "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
}


@dataclass(frozen=True)
class FunctionSpec:
    """What differs between our functions."""

    construct_id: str
    handler: str
    description: str
    memory_size: int
    timeout: Duration
    in_vpc: bool
    reserved_concurrency: int | None = None


API = FunctionSpec(
    construct_id="Api",
    handler="api.handler.lambda_handler",
    description="LeadCRM HTTP API (dashboard and public capture)",
    memory_size=512,
    timeout=Duration.seconds(10),
    in_vpc=True,
)
# Outside the VPC: it touches no database, it only verifies signatures (a secret) and enqueues (SQS).
# Reserved concurrency caps what a flood of webhook calls can take from the account's concurrency.
WEBHOOKS = FunctionSpec(
    construct_id="Webhooks",
    handler="webhooks.handler.lambda_handler",
    description="LeadCRM Meta and WhatsApp webhook receiver: verify, enqueue, nothing else",
    memory_size=256,
    timeout=Duration.seconds(5),
    in_vpc=False,
    reserved_concurrency=20,
)
INGESTION = FunctionSpec(
    construct_id="Ingestion",
    handler="ingestion.handler.lambda_handler",
    description="LeadCRM ingestion queue consumer (Meta leads, WhatsApp referrals, email, CSV)",
    memory_size=512,
    timeout=Duration.seconds(30),
    in_vpc=True,
)
# Outside the VPC: the ingestion function cannot reach graph.facebook.com (isolated subnets, no NAT
# gateway), this one can. It touches no database: it reads a page's token (Secrets Manager), asks Graph
# for the lead and queues it for ingestion. 60 s: a batch of 10 deliveries at Graph's 5 s timeout each.
GRAPH_FETCH = FunctionSpec(
    construct_id="GraphFetch",
    handler="graph_fetch.handler.lambda_handler",
    description="LeadCRM Meta Graph fetch: read Lead Ads leads from Graph, queue them for ingestion",
    memory_size=256,
    timeout=Duration.seconds(60),
    in_vpc=False,
)
# Outside the VPC, for the same reason as graph_fetch: it POSTs CRM events to the Conversions API. No database:
# task_lifecycle queues each event once it has checked it may go; Meta's answer goes back by the ingestion queue.
META_EVENTS = FunctionSpec(
    construct_id="MetaEvents",
    handler="meta_events.handler.lambda_handler",
    description="LeadCRM Meta Conversions API for CRM: send CRM events to Meta, queue Meta's answers",
    memory_size=256,
    timeout=Duration.seconds(60),
    in_vpc=False,
)
# Outside the VPC: it posts signed outbound webhooks to the organizations' endpoints on the internet (the VPC
# has no NAT gateway) and touches no database; it reports each result on the bus. 90 s: a batch of 5 posts at
# 5 s to connect and 10 s to answer each (OutboundWebhooks.BATCH_SIZE).
WEBHOOK_DELIVERY = FunctionSpec(
    construct_id="WebhookDelivery",
    handler="webhook_delivery.handler.lambda_handler",
    description="LeadCRM outbound webhooks: post signed deliveries to subscribed endpoints, report results",
    memory_size=256,
    timeout=Duration.seconds(90),
    in_vpc=False,
)
TASK_LIFECYCLE = FunctionSpec(
    construct_id="TaskLifecycle",
    handler="task_lifecycle.handler.lambda_handler",
    description="LeadCRM domain event consumer and scheduled jobs",
    memory_size=512,
    timeout=Duration.seconds(30),
    in_vpc=True,
)
# Invoked once per deploy by the migrations trigger (``Migrations``), never by traffic. DDL on a large
# table can take minutes; the trigger waits up to 10.
MIGRATIONS = FunctionSpec(
    construct_id="Migrations",
    handler="migrations.handler.lambda_handler",
    description="LeadCRM database migrations (Alembic upgrade head), run by a deploy-time trigger",
    memory_size=512,
    timeout=Duration.minutes(5),
    in_vpc=True,
)
# Invoked by operators with IAM (`make admin ARGS="… --aws"`), never by traffic: bootstraps organizations and
# their staff through the directory's own consumers, so no one needs a route into the isolated subnets.
ADMIN = FunctionSpec(
    construct_id="Admin",
    handler="admin.handler.lambda_handler",
    description="LeadCRM operator commands: create organizations, add members, set roles (make admin --aws)",
    memory_size=512,
    timeout=Duration.seconds(30),
    in_vpc=True,
)
FUNCTION_SPECS = (
    API,
    WEBHOOKS,
    INGESTION,
    GRAPH_FETCH,
    META_EVENTS,
    WEBHOOK_DELIVERY,
    TASK_LIFECYCLE,
    MIGRATIONS,
    ADMIN,
)


class LambdaFunctions(Construct):
    """The api, webhooks, ingestion, graph_fetch, meta_events, webhook_delivery, task_lifecycle, migrations and
    admin functions."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        network: Network,
        core_layer: CoreLayer,
        dependencies_layer: DependenciesLayer,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        super().__init__(scope, construct_id)
        self._network = network
        self._layers = [core_layer.layer, dependencies_layer.layer]
        self._log_retention = log_retention
        # One asset object: CDK uploads the directory once and every function points at it.
        self._code = lambda_.Code.from_asset(str(FUNCTIONS_DIR), exclude=ASSET_EXCLUDES)

        self.api = self._function(API)
        self.webhooks = self._function(WEBHOOKS)
        self.ingestion = self._function(INGESTION)
        self.graph_fetch = self._function(GRAPH_FETCH)
        self.meta_events = self._function(META_EVENTS)
        self.webhook_delivery = self._function(WEBHOOK_DELIVERY)
        self.task_lifecycle = self._function(TASK_LIFECYCLE)
        self.migrations = self._function(MIGRATIONS)
        self.admin = self._function(ADMIN)

        NagSuppressions.add_resource_suppressions(
            self,
            [
                {
                    "id": "AwsSolutions-IAM4",
                    "reason": "AWSLambdaBasicExecutionRole (write own logs) and AWSLambdaVPCAccessExecutionRole "
                    "(manage the function's ENIs) are the AWS-maintained minimum for a Lambda function; "
                    "the ENI actions have no resource-level scoping that a custom policy could improve on.",
                    "applies_to": [
                        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
                        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole",
                    ],
                },
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords do not support "
                    "resource-level permissions, so they can only be granted on '*'.",
                    "applies_to": ["Resource::*"],
                },
                {
                    "id": "AwsSolutions-L1",
                    "reason": "Python 3.12 is the runtime the design pins for every function and layer (the code "
                    "and its wheels are built and tested for it); moving runtime is a deliberate change.",
                },
            ],
            apply_to_children=True,
        )

    @property
    def database_clients(self) -> list[lambda_.Function]:
        """Functions that run core services against Aurora and publish domain events."""
        return [self.api, self.ingestion, self.task_lifecycle]

    @property
    def traffic(self) -> list[lambda_.Function]:
        """Functions that serve requests and messages (what migrations must run before)."""
        return [
            self.api,
            self.webhooks,
            self.ingestion,
            self.graph_fetch,
            self.meta_events,
            self.webhook_delivery,
            self.task_lifecycle,
        ]

    @property
    def all(self) -> list[lambda_.Function]:
        return [*self.traffic, self.migrations, self.admin]

    def _function(self, spec: FunctionSpec) -> lambda_.Function:
        log_group = logs.LogGroup(self, f"{spec.construct_id}Logs", retention=self._log_retention)
        vpc_placement = (
            {
                "vpc": self._network.vpc,
                "vpc_subnets": self._network.isolated_subnets,
                "security_groups": [self._network.lambda_security_group],
            }
            if spec.in_vpc
            else {}
        )
        return lambda_.Function(
            self,
            spec.construct_id,
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=self._code,
            handler=spec.handler,
            layers=list(self._layers),
            memory_size=spec.memory_size,
            timeout=spec.timeout,
            reserved_concurrent_executions=spec.reserved_concurrency,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment=dict(POWERTOOLS_ENVIRONMENT),
            **vpc_placement,
        )
