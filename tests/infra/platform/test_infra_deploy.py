"""Issue 8's remaining promises: the dependencies layer, inbound email, migrations before traffic, IAM wildcards."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Match

REPO_ROOT = Path(__file__).resolve().parents[3]


def _of_type(resources: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: r.get("Properties", {}) for k, r in resources.items() if r["Type"] == resource_type}


def _single(resources: dict[str, Any], resource_type: str, prefix: str = "") -> tuple[str, dict[str, Any]]:
    ((logical_id, properties),) = (
        (k, v) for k, v in _of_type(resources, resource_type).items() if k.startswith(prefix)
    )
    return logical_id, properties


RAW_MAIL = "EmailRawMail"  # the imports bucket (LeadIngestion) is the other one


# --- dependencies layer -----------------------------------------------------------------------------


def test_every_function_carries_the_dependencies_and_the_core_layer(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    layers = _of_type(resources, "AWS::Lambda::LayerVersion")
    (dependencies,) = [k for k in layers if k.startswith("DependenciesLayer")]
    (core,) = [k for k in layers if k.startswith("CoreLayer")]
    for name, logical_id in function_ids.items():
        layers_of_function = resources[logical_id]["Properties"]["Layers"]
        assert sorted(ref["Ref"] for ref in layers_of_function) == sorted([dependencies, core]), name


def _layer_stack(layer_dir: Path) -> cdk.Stack:
    from infra.leadcrm_constructs.dependencies_layer import DependenciesLayer

    stack = cdk.Stack(cdk.App(), "LayerOnly")
    DependenciesLayer(stack, "DependenciesLayer", layer_dir=layer_dir)
    return stack


def test_without_make_layer_synth_uses_the_placeholder_and_warns(tmp_path: Path) -> None:
    from infra.leadcrm_constructs.dependencies_layer import PLACEHOLDER_WARNING_ID

    stack = _layer_stack(tmp_path / "missing")
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("run make layer"))
    assert len(warnings) == 1
    assert PLACEHOLDER_WARNING_ID in warnings[0].entry.data


def test_with_a_built_layer_there_is_no_warning(tmp_path: Path) -> None:
    (tmp_path / "python").mkdir()
    (tmp_path / "python" / "module.py").write_text("")
    stack = _layer_stack(tmp_path)
    assert Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("make layer")) == []


def test_the_placeholder_is_committed() -> None:
    assert (REPO_ROOT / "infra" / "layer-placeholder" / "python" / "README.txt").is_file()


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (REPO_ROOT / "infra" / "layer-requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_layer_requirements_pin_every_runtime_dependency_exactly_within_pyproject_ranges() -> None:
    from packaging.requirements import Requirement

    pins = _pins()
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for spec in map(Requirement, declared):
        name = re.sub(r"[-_.]+", "-", spec.name).lower()
        if name == "boto3":  # provided by the Lambda runtime (see the requirements file)
            assert name not in pins
            continue
        assert name in pins, name
        assert spec.specifier.contains(pins[name]), (name, pins[name], str(spec.specifier))
    assert "aws-xray-sdk" in pins  # the [tracer] extra of Powertools
    assert not {"boto3", "botocore", "s3transfer"} & set(pins)


def test_make_layer_builds_for_lambda_python312_arm64_from_wheels_only() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("\nlayer:") :].split("\n\n", 1)[0]
    for flag in (
        "--only-binary=:all:",
        "--implementation cp",
        "--python-version 3.12",
        "--platform manylinux2014_aarch64",
        "--target $(LAYER_DIR)/python",
        "--no-deps",
        "-r $(LAYER_REQUIREMENTS)",
    ):
        assert flag in recipe, flag


# --- inbound email ----------------------------------------------------------------------------------


def test_raw_mail_bucket_is_encrypted_private_and_forgets_mail(resources: dict[str, Any]) -> None:
    _, bucket = _single(resources, "AWS::S3::Bucket", RAW_MAIL)
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled"
    assert rule["Prefix"] == "inbound/"
    assert 1 <= rule["ExpirationInDays"] <= 30


def test_raw_mail_bucket_policy_refuses_plain_http_and_admits_ses_for_this_account_only(
    resources: dict[str, Any],
) -> None:
    bucket_id, _ = _single(resources, "AWS::S3::Bucket", RAW_MAIL)
    _, policy = _single(resources, "AWS::S3::BucketPolicy", RAW_MAIL)
    assert policy["Bucket"] == {"Ref": bucket_id}
    statements = policy["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
    )
    (ses_put,) = [s for s in statements if s.get("Principal") == {"Service": "ses.amazonaws.com"}]
    assert ses_put["Action"] == "s3:PutObject"
    assert ses_put["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    assert ses_put["Resource"]["Fn::Join"][1][-1] == "/inbound/*"


def test_ses_identity_and_receipt_rule_store_mail_for_the_inbound_domain_in_the_bucket(
    resources: dict[str, Any],
) -> None:
    _, identity = _single(resources, "AWS::SES::EmailIdentity")
    assert identity["EmailIdentity"] == "mail.leadcrm.example.com"  # infra/test-context.json's inboundDomain
    rule_set_id, _ = _single(resources, "AWS::SES::ReceiptRuleSet")
    bucket_id, _ = _single(resources, "AWS::S3::Bucket", RAW_MAIL)
    _, receipt_rule = _single(resources, "AWS::SES::ReceiptRule")
    assert receipt_rule["RuleSetName"] == {"Ref": rule_set_id}
    rule = receipt_rule["Rule"]
    assert rule["Enabled"] is True
    assert rule["Recipients"] == ["mail.leadcrm.example.com"]
    assert rule["ScanEnabled"] is True
    assert rule["TlsPolicy"] == "Require"
    assert rule["Actions"] == [{"S3Action": {"BucketName": {"Ref": bucket_id}, "ObjectKeyPrefix": "inbound/"}}]


def test_new_raw_mail_notifies_the_ingestion_queue_as_in_the_local_stack(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    from infra.local.aws import INBOUND_PREFIX

    bucket_id, _ = _single(resources, "AWS::S3::Bucket", RAW_MAIL)
    _, notifications = _single(resources, "Custom::S3BucketNotifications")
    assert notifications["BucketName"] == {"Ref": bucket_id}
    (configuration,) = notifications["NotificationConfiguration"]["QueueConfigurations"]
    assert configuration["Events"] == ["s3:ObjectCreated:*"]
    assert configuration["Filter"] == {"Key": {"FilterRules": [{"Name": "prefix", "Value": INBOUND_PREFIX}]}}
    ingestion_queues = [
        m["EventSourceArn"]["Fn::GetAtt"][0]
        for m in _of_type(resources, "AWS::Lambda::EventSourceMapping").values()
        if m["FunctionName"]["Ref"] == function_ids["ingestion"]
    ]
    assert configuration["QueueArn"] == {"Fn::GetAtt": [ingestion_queues[0], "Arn"]}
    # and S3 may send to that queue, from this bucket only
    (queue_policy,) = [
        p for p in _of_type(resources, "AWS::SQS::QueuePolicy").values() if {"Ref": ingestion_queues[0]} in p["Queues"]
    ]
    (s3_send,) = [
        s for s in queue_policy["PolicyDocument"]["Statement"] if s.get("Principal") == {"Service": "s3.amazonaws.com"}
    ]
    assert "sqs:SendMessage" in s3_send["Action"]
    assert s3_send["Condition"]["ArnLike"]["aws:SourceArn"] == {"Fn::GetAtt": [bucket_id, "Arn"]}


def test_only_ingestion_reads_raw_mail_and_only_under_inbound(resources: dict[str, Any]) -> None:
    bucket_id, _ = _single(resources, "AWS::S3::Bucket", RAW_MAIL)
    readers = []
    for policy in _of_type(resources, "AWS::IAM::Policy").values():
        for statement in policy["PolicyDocument"]["Statement"]:
            # (CDK merges one role's statements of the same action: the imports bucket may share this one)
            granted = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            on_bucket = [r for r in granted if bucket_id in json.dumps(r)]
            if on_bucket and statement["Action"] == "s3:GetObject":
                readers.extend((policy["Roles"], r) for r in on_bucket)
    assert len(readers) == 1
    roles, resource = readers[0]
    assert roles[0]["Ref"].startswith("FunctionsIngestionServiceRole")
    assert resource["Fn::Join"][1][-1] == "/inbound/*"


def test_dns_records_to_publish_are_stack_outputs(template: Any) -> None:
    outputs = set(template.to_json()["Outputs"])
    assert any(o.startswith("EmailInboundMx") for o in outputs)
    assert sum(o.startswith("EmailDkimCname") for o in outputs) == 3


# --- migrations ---------------------------------------------------------------------------------------


def test_migrations_run_by_a_trigger_after_the_database_and_before_the_traffic_functions(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    triggers = {k: r for k, r in resources.items() if r["Type"] == "Custom::Trigger"}
    ((trigger_id, trigger),) = triggers.items()
    handler_version = trigger["Properties"]["HandlerArn"]["Ref"]
    assert resources[handler_version]["Type"] == "AWS::Lambda::Version"
    assert resources[handler_version]["Properties"]["FunctionName"] == {"Ref": function_ids["migrations"]}
    assert trigger["Properties"]["InvocationType"] == "RequestResponse"
    assert trigger["Properties"]["ExecuteOnHandlerChange"] is True
    after = set(trigger["DependsOn"])
    for resource_type in ("AWS::RDS::DBCluster", "AWS::RDS::DBProxy", "AWS::RDS::DBProxyTargetGroup"):
        assert {k for k, r in resources.items() if r["Type"] == resource_type} <= after, resource_type
    for name in ("api", "ingestion", "task_lifecycle"):
        assert trigger_id in resources[function_ids[name]]["DependsOn"], name


def test_migrations_function_reaches_the_database_and_carries_the_migrations_hash(
    resources: dict[str, Any], function_ids: dict[str, str], policy_actions: dict[str, set[str]]
) -> None:
    from infra.leadcrm_constructs.migrations import migrations_hash

    properties = resources[function_ids["migrations"]]["Properties"]
    assert len(properties["VpcConfig"]["SubnetIds"]) == 2
    variables = properties["Environment"]["Variables"]
    assert variables["DB_AUTH_MODE"] == "iam"
    assert variables["MIGRATIONS_HASH"] == migrations_hash()
    assert "EVENT_BUS_NAME" not in variables
    assert properties["Timeout"] * 1000 < int(
        next(r for r in resources.values() if r["Type"] == "Custom::Trigger")["Properties"]["Timeout"]
    )
    assert "rds-db:connect" in policy_actions["migrations"]
    assert not {a for a in policy_actions["migrations"] if a.startswith(("sqs:", "events:", "s3:", "ses:"))}


def test_migrations_hash_changes_with_a_migration(tmp_path: Path) -> None:
    from infra.leadcrm_constructs.migrations import migrations_hash

    (tmp_path / "versions").mkdir()
    (tmp_path / "versions" / "0001.py").write_text("a")
    first = migrations_hash(tmp_path)
    (tmp_path / "versions" / "__pycache__").mkdir()
    (tmp_path / "versions" / "__pycache__" / "0001.cpython-311.pyc").write_bytes(b"x")
    assert migrations_hash(tmp_path) == first
    (tmp_path / "versions" / "0002.py").write_text("b")
    assert migrations_hash(tmp_path) != first


def test_migrations_handler_upgrades_and_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    import leadcrm.platform.db.migrate
    from migrations import handler

    calls: list[object] = []
    monkeypatch.setattr(leadcrm.platform.db.migrate, "upgrade", lambda *a, **k: calls.append(a))

    class Context:
        function_name = "migrations"
        memory_limit_in_mb = 512
        invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:migrations"
        aws_request_id = "req"

    assert handler.lambda_handler({"RequestType": "Create"}, Context()) == {"status": "migrated"}
    assert calls == [()]


# --- IAM ------------------------------------------------------------------------------------------------


def _statements(resource: dict[str, Any]) -> list[dict[str, Any]]:
    properties = resource["Properties"]
    if resource["Type"] == "AWS::IAM::Policy":
        return properties["PolicyDocument"]["Statement"]
    return [s for p in properties.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]


def _wildcards(statement: dict[str, Any]) -> bool:
    values: list[Any] = []
    for key in ("Action", "Resource"):
        value = statement.get(key, [])
        values.extend(value if isinstance(value, list) else [value])
    return any("*" in json.dumps(v) for v in values)


def test_no_wildcard_iam_without_an_acknowledgment(app_and_stack: tuple[Any, Any], resources: dict[str, Any]) -> None:
    """Every policy granting a wildcard action or resource carries a cdk-nag IAM5 suppression with a reason."""
    _, stack = app_and_stack
    unacknowledged = []
    for logical_id, resource in resources.items():
        if resource["Type"] not in {"AWS::IAM::Policy", "AWS::IAM::Role"}:
            continue
        if not any(s["Effect"] == "Allow" and _wildcards(s) for s in _statements(resource)):
            continue
        suppressions = resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
        if not any(s["id"] == "AwsSolutions-IAM5" and len(s.get("reason", "")) > 20 for s in suppressions):
            unacknowledged.append(logical_id)
    assert unacknowledged == []
    assert Annotations.from_stack(stack).find_error("*", Match.string_like_regexp("AwsSolutions-IAM5.*")) == []


def test_the_webhook_receiver_graph_fetch_meta_events_and_webhook_delivery_are_the_only_functions_without_vpc(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    outside = {name for name, lid in function_ids.items() if "VpcConfig" not in resources[lid]["Properties"]}
    # none touches the database; graph_fetch and meta_events must reach Graph, webhook_delivery the subscribed
    # endpoints
    assert outside == {"webhooks", "graph_fetch", "meta_events", "webhook_delivery"}
    assert lambda_.Runtime.PYTHON_3_12.name == "python3.12"
