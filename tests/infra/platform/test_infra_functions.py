"""The nine functions: handlers, runtime, layers, placement, environment, tracing, log groups and least-privilege
grants."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

HANDLERS = {
    "api": "api.handler.lambda_handler",
    "webhooks": "webhooks.handler.lambda_handler",
    "ingestion": "ingestion.handler.lambda_handler",
    "graph_fetch": "graph_fetch.handler.lambda_handler",
    "meta_events": "meta_events.handler.lambda_handler",
    "webhook_delivery": "webhook_delivery.handler.lambda_handler",
    "task_lifecycle": "task_lifecycle.handler.lambda_handler",
    "migrations": "migrations.handler.lambda_handler",
    "admin": "admin.handler.lambda_handler",
}
DATABASE_FUNCTIONS = ("api", "ingestion", "task_lifecycle", "admin")
DATABASE_ACCESS = (*DATABASE_FUNCTIONS, "migrations")  # migrations connects, but publishes no events
POWERTOOLS = {
    "POWERTOOLS_SERVICE_NAME": "leadcrm",
    "POWERTOOLS_METRICS_NAMESPACE": "LeadCRM",
    "LOG_LEVEL": "INFO",
    "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
    "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
}
LOG_RETENTION_DAYS = 30


@pytest.mark.parametrize(
    ("name", "memory", "timeout"),
    [
        ("api", 512, 10),
        ("webhooks", 256, 5),
        ("ingestion", 512, 30),
        ("graph_fetch", 256, 60),
        ("meta_events", 256, 60),
        ("webhook_delivery", 256, 90),
        ("task_lifecycle", 512, 30),
        ("migrations", 512, 300),
        ("admin", 512, 30),
    ],
)
def test_function_runtime_and_size(template: Template, name: str, memory: int, timeout: int) -> None:
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": HANDLERS[name],
            "Runtime": "python3.12",
            "Architectures": ["arm64"],
            "MemorySize": memory,
            "Timeout": timeout,
            "TracingConfig": {"Mode": "Active"},
            "Layers": [
                {"Ref": Match.string_like_regexp("^CoreLayer")},
                {"Ref": Match.string_like_regexp("^DependenciesLayer")},
            ],
            "Environment": {"Variables": Match.object_like(POWERTOOLS)},
            "LoggingConfig": {"LogGroup": Match.any_value()},
        },
    )


@pytest.mark.parametrize("name", HANDLERS)
def test_every_function_traces_actively_and_may_send_its_traces(
    resources: dict[str, Any], function_ids: dict[str, str], policy_actions: dict[str, set[str]], name: str
) -> None:
    assert resources[function_ids[name]]["Properties"]["TracingConfig"] == {"Mode": "Active"}
    assert {"xray:PutTraceSegments", "xray:PutTelemetryRecords"} <= policy_actions[name]


@pytest.mark.parametrize("name", HANDLERS)
def test_every_function_logs_to_a_log_group_of_its_own_with_a_retention(
    resources: dict[str, Any], function_ids: dict[str, str], name: str
) -> None:
    group = resources[function_ids[name]]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    assert resources[group]["Type"] == "AWS::Logs::LogGroup"
    assert resources[group]["Properties"]["RetentionInDays"] == LOG_RETENTION_DAYS
    others = [other for other in function_ids if other != name]
    assert all(resources[function_ids[o]]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"] != group for o in others)


@pytest.mark.parametrize("name", HANDLERS)
def test_every_function_names_the_service_and_keeps_pii_out_of_its_traces(
    resources: dict[str, Any], function_ids: dict[str, str], name: str
) -> None:
    variables = resources[function_ids[name]]["Properties"]["Environment"]["Variables"]
    assert {key: variables.get(key) for key in POWERTOOLS} == POWERTOOLS
    assert "POWERTOOLS_TRACE_DISABLED" not in variables
    assert variables.get("POWERTOOLS_LOGGER_LOG_EVENT", "false") == "false"  # an event holds a lead's details


def test_exactly_nine_python_functions_share_one_code_asset(resources: dict[str, Any]) -> None:
    ours = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Runtime") == "python3.12"
    ]
    assert sorted(r["Properties"]["Handler"] for r in ours) == sorted(HANDLERS.values())
    assert len({r["Properties"]["Code"]["S3Key"] for r in ours}) == 1


def test_both_layers_are_python312_arm64(resources: dict[str, Any]) -> None:
    layers = {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::Lambda::LayerVersion"}
    assert sorted(k.split("Layer")[0] for k in layers) == ["Core", "Dependencies"]
    for layer in layers.values():
        assert layer["CompatibleRuntimes"] == ["python3.12"]
        assert layer["CompatibleArchitectures"] == ["arm64"]


@pytest.mark.parametrize("name", DATABASE_FUNCTIONS)
def test_database_functions_run_in_isolated_subnets_with_db_settings(
    resources: dict[str, Any], function_ids: dict[str, str], name: str
) -> None:
    properties = resources[function_ids[name]]["Properties"]
    assert len(properties["VpcConfig"]["SubnetIds"]) == 2
    variables = properties["Environment"]["Variables"]
    assert variables["DB_AUTH_MODE"] == "iam"
    assert variables["DB_HOST"] == {"Fn::GetAtt": [_single(resources, "AWS::RDS::DBProxy"), "Endpoint"]}
    assert variables["DB_PORT"] == "5432"
    assert variables["DB_NAME"] == "leadcrm"
    assert variables["DB_USER"] == "leadcrm_admin"
    assert variables["DB_SECRET_ARN"] == {"Ref": _single(resources, "AWS::SecretsManager::SecretTargetAttachment")}
    assert variables["EVENT_BUS_NAME"] == {"Ref": _single(resources, "AWS::Events::EventBus")}


def test_webhooks_function_is_outside_the_vpc_with_reserved_concurrency(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    properties = resources[function_ids["webhooks"]]["Properties"]
    assert "VpcConfig" not in properties
    assert properties["ReservedConcurrentExecutions"] == 20
    variables = properties["Environment"]["Variables"]
    assert variables["INGESTION_QUEUE_URL"]["Ref"].startswith("MessagingIngestionQueue")
    assert variables["GRAPH_FETCH_QUEUE_URL"]["Ref"].startswith("MessagingGraphFetchQueue")
    assert variables["META_SECRET_ARN"]["Ref"].startswith("WebhookIngressMetaSecret")
    assert not any(key.startswith("DB_") for key in variables)


def test_graph_fetch_runs_outside_the_vpc_without_database_settings(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    properties = resources[function_ids["graph_fetch"]]["Properties"]
    assert "VpcConfig" not in properties  # it must reach graph.facebook.com; the VPC has no NAT gateway
    variables = properties["Environment"]["Variables"]
    assert variables["INGESTION_QUEUE_URL"]["Ref"].startswith("MessagingIngestionQueue")
    assert variables["INTEGRATION_SECRET_PREFIX"] == "leadcrm/integrations/"
    assert not any(key.startswith("DB_") or key == "EVENT_BUS_NAME" for key in variables)


def test_graph_fetch_gets_no_database_events_or_receive_on_other_queues(policy_actions: dict[str, set[str]]) -> None:
    assert not {"rds-db:connect", "events:PutEvents"} & policy_actions["graph_fetch"]
    assert {"sqs:ReceiveMessage", "sqs:SendMessage", "secretsmanager:GetSecretValue"} <= policy_actions["graph_fetch"]


def test_webhooks_function_url_has_no_aws_auth(template: Template, function_ids: dict[str, str]) -> None:
    template.resource_count_is("AWS::Lambda::Url", 1)
    template.has_resource_properties(
        "AWS::Lambda::Url",
        {"AuthType": "NONE", "TargetFunctionArn": {"Fn::GetAtt": [function_ids["webhooks"], "Arn"]}},
    )


def test_meta_secret_is_a_generated_placeholder(template: Template) -> None:
    template.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {
            "GenerateSecretString": {
                "SecretStringTemplate": Match.string_like_regexp('"appSecret"'),
                "GenerateStringKey": "verifyToken",
            }
        },
    )


@pytest.mark.parametrize("name", DATABASE_FUNCTIONS)
def test_database_functions_get_only_what_they_use(policy_actions: dict[str, set[str]], name: str) -> None:
    assert {"rds-db:connect", "events:PutEvents", "secretsmanager:GetSecretValue"} <= policy_actions[name]
    # The API queues CSV import jobs and ingestion queues their continuations; task_lifecycle queues CRM events
    # for meta_events (tests/infra/ingestion/test_infra_meta_conversions.py); the API and task_lifecycle queue
    # outbound webhook deliveries (OutboundWebhooks); admin sends nothing.
    assert ("sqs:SendMessage" in policy_actions[name]) == (name in ("api", "ingestion", "task_lifecycle"))


def test_only_consumers_receive_and_the_webhook_receiver_sends(policy_actions: dict[str, set[str]]) -> None:
    assert "sqs:ReceiveMessage" in policy_actions["ingestion"]
    assert "sqs:ReceiveMessage" in policy_actions["task_lifecycle"]
    assert "sqs:ReceiveMessage" not in policy_actions["api"]
    assert "sqs:SendMessage" in policy_actions["webhooks"]
    assert not {"rds-db:connect", "events:PutEvents"} & policy_actions["webhooks"]


def test_rds_connect_is_scoped_to_the_proxy_and_user(resources: dict[str, Any]) -> None:
    statements = [
        statement
        for resource in resources.values()
        if resource["Type"] == "AWS::IAM::Policy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "rds-db:connect"
    ]
    assert len(statements) == len(DATABASE_ACCESS)
    for statement in statements:
        parts = statement["Resource"]["Fn::Join"][1]
        assert parts[-1] == "/leadcrm_admin"
        assert ":dbuser:" in parts


def _single(resources: dict[str, Any], resource_type: str) -> str:
    (logical_id,) = [key for key, resource in resources.items() if resource["Type"] == resource_type]
    return logical_id


def test_the_admin_function_is_reachable_only_through_iam(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    """No URL, no queue, no schedule, no resource policy: only a caller with lambda:InvokeFunction runs it."""
    admin = function_ids["admin"]

    def names_admin(value: Any) -> bool:
        if isinstance(value, dict):
            return any(names_admin(v) for v in value.values())
        if isinstance(value, list):
            return any(names_admin(v) for v in value)
        return value == admin

    for resource in resources.values():
        if resource["Type"] in ("AWS::Lambda::Permission", "AWS::Lambda::Url", "AWS::Lambda::EventSourceMapping"):
            assert not names_admin(resource["Properties"]), resource
        if resource["Type"] == "AWS::Scheduler::Schedule":
            assert not names_admin(resource["Properties"]["Target"]), resource


def test_the_stack_outputs_the_admin_function_name(template: Template, function_ids: dict[str, str]) -> None:
    template.has_output("AdminFunctionName", {"Value": {"Ref": function_ids["admin"]}})
