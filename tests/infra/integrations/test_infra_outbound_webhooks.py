"""Outbound webhooks' infrastructure: the delivery queue (with its DLQ and alarms) between the VPC and the
webhook_delivery function outside it, who may queue deliveries, what the function may do (report on the
bus, nothing else), and the sweep's schedule."""

from __future__ import annotations

import json
from typing import Any


def _statements_of(resources: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    role = resources[function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = []
    for resource in resources.values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"]["Roles"]:
            statements.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    return statements


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        action = statement["Action"]
        found |= {action} if isinstance(action, str) else set(action)
    return found


def _delivery_queue_id(resources: dict[str, Any]) -> str:
    [queue_id] = [
        k
        for k, r in resources.items()
        if r["Type"] == "AWS::SQS::Queue" and k.startswith("OutboundWebhooksWebhookDeliveryQueue")
    ]
    return queue_id


def test_webhook_delivery_runs_outside_the_vpc_with_the_bus_and_no_database(resources, function_ids):
    properties = resources[function_ids["webhook_delivery"]]["Properties"]
    assert "VpcConfig" not in properties
    variables = properties["Environment"]["Variables"]
    assert "EVENT_BUS_NAME" in variables
    assert not any(name.startswith("DB_") for name in variables)


def test_webhook_delivery_may_only_receive_deliveries_and_report_on_the_bus(resources, function_ids):
    actions = _actions(_statements_of(resources, function_ids["webhook_delivery"]))
    assert "events:PutEvents" in actions
    assert "sqs:ReceiveMessage" in actions
    assert not {a for a in actions if a.startswith(("rds", "secretsmanager", "s3:", "sqs:SendMessage"))}


def test_the_delivery_queue_has_a_dlq_and_feeds_webhook_delivery_in_small_batches(resources, function_ids):
    queue_id = _delivery_queue_id(resources)
    queue = resources[queue_id]["Properties"]
    assert queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0].startswith(
        "OutboundWebhooksWebhookDeliveryDeadLetterQueue"
    )
    # six times the function's 90 s timeout
    assert queue["VisibilityTimeout"] == 540
    [mapping] = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
        and r["Properties"]["FunctionName"]["Ref"] == function_ids["webhook_delivery"]
    ]
    assert mapping["EventSourceArn"]["Fn::GetAtt"][0] == queue_id
    assert mapping["BatchSize"] == 5


def test_only_the_api_and_task_lifecycle_queue_deliveries(resources, function_ids):
    queue_id = _delivery_queue_id(resources)
    senders = {
        name
        for name, function_id in function_ids.items()
        if any(
            "sqs:SendMessage" in _actions([s]) and queue_id in json.dumps(s["Resource"])
            for s in _statements_of(resources, function_id)
        )
    }
    assert senders == {"api", "task_lifecycle"}
    for name in ("api", "task_lifecycle"):
        variables = resources[function_ids[name]]["Properties"]["Environment"]["Variables"]
        assert variables["WEBHOOK_DELIVERY_QUEUE_URL"] == {"Ref": queue_id}


def test_the_delivery_queue_and_its_dlq_are_alarmed(resources):
    alarmed = json.dumps([r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"])
    assert "OutboundWebhooksWebhookDeliveryQueue" in alarmed
    assert "OutboundWebhooksWebhookDeliveryDeadLetterQueue" in alarmed


def test_the_delivery_sweep_runs_every_minute(resources):
    schedules = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Scheduler::Schedule"]
    [sweep] = [s for s in schedules if json.loads(s["Target"]["Input"])["job"] == "webhook_delivery_sweep"]
    assert sweep["ScheduleExpression"] == "rate(1 minute)"
