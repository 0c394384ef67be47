"""SES events in AWS: the configuration set every send names, its EventBridge destination for what becomes of
each mail, the default-bus rule that routes those events (and only those of this set) to task_lifecycle's
queue, the grants that let the senders name the set, and the queued email sweep's schedule."""

from __future__ import annotations

import json
from typing import Any

from leadcrm.conversations.rules.delivery import DETAIL_TYPES

# Every event type the issue names, and Send: SES's receipt that it took a mail (the sweep's evidence).
REQUIRED_EVENT_TYPES = {"delivery", "bounce", "complaint", "reject", "deliveryDelay"}


def _of_type(resources: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {logical_id: r for logical_id, r in resources.items() if r["Type"] == kind}


def _configuration_set(resources: dict[str, Any]) -> str:
    (logical_id,) = _of_type(resources, "AWS::SES::ConfigurationSet")
    return logical_id


def _ses_rule(resources: dict[str, Any]) -> dict[str, Any]:
    (rule,) = [
        r["Properties"]
        for r in _of_type(resources, "AWS::Events::Rule").values()
        if r["Properties"].get("EventPattern", {}).get("source") == ["aws.ses"]
    ]
    return rule


def _send_statements(resources: dict[str, Any], function_ids: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Each function's policy statements that grant ses:SendEmail."""
    role_of = {
        name: resources[logical_id]["Properties"]["Role"]["Fn::GetAtt"][0] for name, logical_id in function_ids.items()
    }
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in function_ids}
    for policy in _of_type(resources, "AWS::IAM::Policy").values():
        roles = {role["Ref"] for role in policy["Properties"]["Roles"]}
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "ses:SendEmail" in actions:
                for name, role in role_of.items():
                    if role in roles:
                        found[name].append(statement)
    return found


def test_one_configuration_set_keeps_reputation_metrics_and_suppresses_bounces_and_complaints(resources):
    properties = resources[_configuration_set(resources)]["Properties"]
    assert properties["ReputationOptions"] == {"ReputationMetricsEnabled": True}
    assert set(properties["SuppressionOptions"]["SuppressedReasons"]) == {"BOUNCE", "COMPLAINT"}


def test_the_configuration_set_publishes_delivery_bounce_complaint_reject_and_delay_to_the_default_bus(resources):
    destinations = _of_type(resources, "AWS::SES::ConfigurationSetEventDestination").values()
    (destination,) = [r["Properties"] for r in destinations]
    assert destination["ConfigurationSetName"] == {"Ref": _configuration_set(resources)}
    event = destination["EventDestination"]
    assert event["Enabled"] is True
    assert set(event["MatchingEventTypes"]) == REQUIRED_EVENT_TYPES | {"send"}
    bus_arn = json.dumps(event["EventBridgeDestination"]["EventBusArn"])
    assert bus_arn.endswith(':event-bus/default"]]}')  # SES publishes to the default bus only


def test_the_default_bus_rule_routes_this_sets_ses_events_to_the_task_lifecycle_queue(resources):
    rule = _ses_rule(resources)
    assert rule["EventBusName"] == "default"
    pattern = rule["EventPattern"]
    assert set(pattern["detail-type"]) == set(DETAIL_TYPES)  # exactly what conversations consumes
    # Only events of this stack's configuration set: another set of the account never reaches us.
    assert pattern["detail"]["mail"]["tags"]["ses:configuration-set"] == [{"Ref": _configuration_set(resources)}]
    (target,) = rule["Targets"]
    assert target["Arn"]["Fn::GetAtt"][0].startswith("MessagingTaskLifecycleQueue")
    assert target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0].startswith("MessagingTaskLifecycleDeadLetterQueue")


def test_the_queue_admits_eventbridge_for_the_ses_rule_only(resources):
    (rule_id,) = [
        logical_id
        for logical_id, r in _of_type(resources, "AWS::Events::Rule").items()
        if r["Properties"].get("EventPattern", {}).get("source") == ["aws.ses"]
    ]
    (policy,) = [
        p["Properties"]["PolicyDocument"]
        for p in _of_type(resources, "AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"][0]["Ref"].startswith("MessagingTaskLifecycleQueue")
    ]
    [grant] = [
        s
        for s in policy["Statement"]
        if s["Effect"] == "Allow" and s.get("Condition", {}).get("ArnEquals", {}).get("aws:SourceArn")
        == {"Fn::GetAtt": [rule_id, "Arn"]}
    ]
    assert grant["Principal"] == {"Service": "events.amazonaws.com"}
    assert "sqs:SendMessage" in grant["Action"]
    assert not any(a in grant["Action"] for a in ("sqs:*", "sqs:ReceiveMessage", "sqs:DeleteMessage"))


def test_every_function_that_sends_names_the_configuration_set(resources, function_ids):
    statements = _send_statements(resources, function_ids)
    senders = {name for name, found in statements.items() if found}
    assert senders == {"api", "task_lifecycle"}
    configuration_set = {"Ref": _configuration_set(resources)}
    for name in function_ids:
        variables = resources[function_ids[name]]["Properties"].get("Environment", {}).get("Variables", {})
        if name in senders:
            assert variables.get("SES_CONFIGURATION_SET") == configuration_set, name
        else:
            assert "SES_CONFIGURATION_SET" not in variables, name


def test_senders_may_send_only_through_the_identities_and_this_configuration_set(resources, function_ids):
    configuration_set = _configuration_set(resources)
    for name, found in _send_statements(resources, function_ids).items():
        for statement in found:
            assert statement["Action"] == "ses:SendEmail", name
            resources_json = json.dumps(statement["Resource"])
            assert ":identity/*" in resources_json, name
            assert ":configuration-set/" in resources_json and configuration_set in resources_json, name


def test_the_queued_email_sweep_runs_every_five_minutes(resources):
    (schedule,) = [
        r["Properties"]
        for r in _of_type(resources, "AWS::Scheduler::Schedule").values()
        if json.loads(r["Properties"]["Target"]["Input"])["job"] == "queued_email_sweep"
    ]
    assert schedule["ScheduleExpression"] == "rate(5 minutes)"
