"""Lead ingestion's infrastructure: connection secrets under one prefix (read only by graph_fetch, Meta
pages only), the CSV imports bucket, and who may queue ingestion and graph-fetch work."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match, Template


def _statements_of(resources: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    role = resources[function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = []
    for resource in resources.values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"]["Roles"]:
            statements.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    return statements


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_the_api_manages_connection_secrets_only_under_the_integrations_prefix(resources, function_ids):
    statements = [
        s
        for s in _statements_of(resources, function_ids["api"])
        if "secret:leadcrm/integrations/*" in json.dumps(s["Resource"])
    ]
    assert len(statements) == 1
    assert _actions(statements[0]) == {
        "secretsmanager:CreateSecret",
        "secretsmanager:PutSecretValue",
        "secretsmanager:DeleteSecret",
        "secretsmanager:RestoreSecret",
    }
    assert "secret:leadcrm/integrations/*" in json.dumps(statements[0]["Resource"])


def test_graph_fetch_reads_only_meta_page_and_whatsapp_number_secrets(resources, function_ids):
    statements = [
        s
        for s in _statements_of(resources, function_ids["graph_fetch"])
        if "leadcrm/integrations" in json.dumps(s["Resource"])
    ]
    assert [_actions(s) for s in statements] == [{"secretsmanager:GetSecretValue"}]
    granted = json.dumps(statements[0]["Resource"])
    assert "secret:leadcrm/integrations/meta_lead_ads/*" in granted
    assert "secret:leadcrm/integrations/whatsapp_cloud/*" in granted
    assert "secret:leadcrm/integrations/*" not in granted


def test_ingestion_no_longer_reads_connection_secrets(resources, function_ids):
    assert not any(
        "leadcrm/integrations" in json.dumps(s["Resource"])
        for s in _statements_of(resources, function_ids["ingestion"])
    )


def test_the_webhook_receiver_cannot_touch_connection_secrets(resources, function_ids):
    assert not any(
        "leadcrm/integrations" in json.dumps(s["Resource"]) for s in _statements_of(resources, function_ids["webhooks"])
    )


def test_the_imports_bucket_is_private_encrypted_expiring_and_accepts_puts_from_the_dashboard(template: Template):
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": Match.any_value(),
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [Match.object_like({"Prefix": "imports/", "ExpirationInDays": 7, "Status": "Enabled"})]
                )
            },
            "CorsConfiguration": {
                "CorsRules": [Match.object_like({"AllowedMethods": ["PUT"], "AllowedHeaders": ["content-type"]})]
            },
        },
    )


def test_the_api_and_ingestion_know_the_imports_bucket_and_the_api_the_secret_prefix(resources, function_ids):
    for name in ("api", "ingestion"):
        variables = resources[function_ids[name]]["Properties"]["Environment"]["Variables"]
        assert "Ref" in variables["LEAD_IMPORTS_BUCKET"]
    assert resources[function_ids["api"]]["Properties"]["Environment"]["Variables"]["INTEGRATION_SECRET_PREFIX"] == (
        "leadcrm/integrations/"
    )


def test_the_api_and_ingestion_may_queue_ingestion_work(resources, function_ids):
    for name in ("api", "ingestion", "webhooks", "graph_fetch"):
        variables = resources[function_ids[name]]["Properties"]["Environment"]["Variables"]
        assert "INGESTION_QUEUE_URL" in variables
        assert any("sqs:SendMessage" in _actions(s) for s in _statements_of(resources, function_ids[name]))


def test_graph_fetch_work_may_be_queued_by_the_receiver_ingestion_and_the_api_only(resources, function_ids):
    """Leadgen webhooks (receiver, ingestion) and WhatsApp sends and template syncs (the API)."""
    for name, allowed in (("webhooks", True), ("ingestion", True), ("api", True), ("task_lifecycle", False)):
        variables = resources[function_ids[name]]["Properties"]["Environment"]["Variables"]
        assert ("GRAPH_FETCH_QUEUE_URL" in variables) is allowed


# -- webhook bodies (claim checks of bodies too large for a queue message) -----------------------------------


def _bodies_bucket_id(resources: dict[str, Any]) -> str:
    (bucket_id,) = [i for i, r in resources.items() if r["Type"] == "AWS::S3::Bucket" and "WebhookBodies" in i]
    return bucket_id


def _grants_on(resources: dict[str, Any], function_id: str, bucket_id: str) -> list[tuple[set[str], str]]:
    return [
        (_actions(s), json.dumps(s["Resource"]))
        for s in _statements_of(resources, function_id)
        if bucket_id in json.dumps(s["Resource"])
    ]


def test_the_webhook_bodies_bucket_is_private_encrypted_tls_only_and_expires_with_the_queues(resources):
    bucket = resources[_bodies_bucket_id(resources)]
    properties = bucket["Properties"]
    assert properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert all(properties["PublicAccessBlockConfiguration"].values())
    (rule,) = properties["LifecycleConfiguration"]["Rules"]
    assert (rule["Prefix"], rule["Status"]) == ("webhooks/", "Enabled")
    assert rule["ExpirationInDays"] > 14  # the queues' and DLQs' retention: a redriven message finds its body
    assert bucket["DeletionPolicy"] == "Retain"
    policies = [r for r in resources.values() if r["Type"] == "AWS::S3::BucketPolicy"]
    tls = [
        s
        for p in policies
        if _bodies_bucket_id(resources) in json.dumps(p["Properties"]["Bucket"])
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in tls)


def test_the_receiver_may_only_put_webhook_bodies_and_their_consumers_only_get_them(resources, function_ids):
    bucket_id = _bodies_bucket_id(resources)
    assert [actions for actions, _ in _grants_on(resources, function_ids["webhooks"], bucket_id)] == [{"s3:PutObject"}]
    for name in ("graph_fetch", "ingestion"):
        assert [actions for actions, _ in _grants_on(resources, function_ids[name], bucket_id)] == [{"s3:GetObject"}]
    for name in ("api", "task_lifecycle", "migrations"):
        assert _grants_on(resources, function_ids[name], bucket_id) == []
    for name in ("webhooks", "graph_fetch", "ingestion"):
        (grant,) = _grants_on(resources, function_ids[name], bucket_id)
        assert "/webhooks/*" in grant[1]


def test_the_receiver_and_its_consumers_know_the_webhook_bodies_bucket(resources, function_ids):
    bucket_id = _bodies_bucket_id(resources)
    for name in ("webhooks", "graph_fetch", "ingestion"):
        variables = resources[function_ids[name]]["Properties"]["Environment"]["Variables"]
        assert variables["WEBHOOK_BODIES_BUCKET"] == {"Ref": bucket_id}
