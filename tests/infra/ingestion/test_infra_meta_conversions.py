"""Meta conversions' infrastructure (Conversions API for CRM): the meta_events function outside the VPC consumes its
own queue (with a DLQ and partial batch failures), only task_lifecycle queues CRM events on it, the sender reads
only Meta page secrets and answers through the ingestion queue, and the queue and its DLQ are alarmed."""

from __future__ import annotations

import json
from typing import Any

QUEUE_PREFIX = "MetaConversionsMetaEventsQueue"
DLQ_PREFIX = "MetaConversionsMetaEventsDeadLetterQueue"


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


def _mapping_of(resources: dict[str, Any], function_id: str) -> dict[str, Any]:
    (mapping,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping" and r["Properties"]["FunctionName"]["Ref"] == function_id
    ]
    return mapping


def test_meta_events_consumes_its_own_queue_which_has_its_own_dlq(resources, function_ids):
    mapping = _mapping_of(resources, function_ids["meta_events"])
    queue_id = mapping["EventSourceArn"]["Fn::GetAtt"][0]
    assert queue_id.startswith(QUEUE_PREFIX)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    redrive = resources[queue_id]["Properties"]["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"]["Fn::GetAtt"][0].startswith(DLQ_PREFIX)
    assert redrive["maxReceiveCount"] == 5


def test_meta_events_runs_outside_the_vpc_without_database_settings(resources, function_ids, policy_actions):
    properties = resources[function_ids["meta_events"]]["Properties"]
    assert "VpcConfig" not in properties
    assert not any(name.startswith("DB_") for name in properties["Environment"]["Variables"])
    assert not {"rds-db:connect", "events:PutEvents"} & policy_actions["meta_events"]


def test_only_task_lifecycle_queues_crm_events(resources, function_ids):
    senders = {
        name
        for name, function_id in function_ids.items()
        for s in _statements_of(resources, function_id)
        if "sqs:SendMessage" in _actions(s) and QUEUE_PREFIX in json.dumps(s["Resource"])
    }
    assert senders == {"task_lifecycle"}
    variables = resources[function_ids["task_lifecycle"]]["Properties"]["Environment"]["Variables"]
    assert variables["META_EVENTS_QUEUE_URL"]["Ref"].startswith(QUEUE_PREFIX)


def test_meta_events_reads_only_meta_page_secrets_and_answers_through_the_ingestion_queue(resources, function_ids):
    statements = _statements_of(resources, function_ids["meta_events"])
    secrets = [s for s in statements if "secretsmanager" in json.dumps(s["Action"])]
    assert [_actions(s) for s in secrets] == [{"secretsmanager:GetSecretValue"}]
    assert "secret:leadcrm/integrations/meta_lead_ads/*" in json.dumps(secrets[0]["Resource"])
    assert any(
        "sqs:SendMessage" in _actions(s) and "MessagingIngestionQueue" in json.dumps(s["Resource"]) for s in statements
    )
    variables = resources[function_ids["meta_events"]]["Properties"]["Environment"]["Variables"]
    assert variables["INGESTION_QUEUE_URL"]["Ref"].startswith("MessagingIngestionQueue")
    assert variables["INTEGRATION_SECRET_PREFIX"] == "leadcrm/integrations/"


def test_the_meta_events_dead_letter_queue_is_alarmed(resources):
    alarmed = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and DLQ_PREFIX in json.dumps(r["Properties"])
        and "ApproximateNumberOfMessagesVisible" in json.dumps(r["Properties"])
    ]
    assert alarmed, "no alarm watches the meta-events DLQ"
