"""Queues, event source mappings, the domain event rule and the scheduled jobs."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match, Template


def _of_type(resources: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in resources.items() if r["Type"] == resource_type}


def test_every_work_queue_has_a_dlq_and_every_queue_is_encrypted(resources: dict[str, Any]) -> None:
    queues = _of_type(resources, "AWS::SQS::Queue")
    work_queues = {k: q for k, q in queues.items() if "RedrivePolicy" in q}
    dead_letter_queues = {q["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0] for q in work_queues.values()}
    assert len(work_queues) == 5  # ingestion, task-lifecycle, graph-fetch, meta-events, webhook-delivery
    assert set(queues) == set(work_queues) | dead_letter_queues  # no queue without a DLQ that is not one
    for queue in work_queues.values():
        assert queue["RedrivePolicy"]["maxReceiveCount"] == 5
    for queue in queues.values():
        assert queue["SqsManagedSseEnabled"] is True


def test_queues_refuse_plain_http(template: Template) -> None:
    template.resource_count_is("AWS::SQS::QueuePolicy", 10)
    template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )


def test_event_source_mappings_report_partial_failures(resources: dict[str, Any], function_ids: dict[str, str]) -> None:
    mappings = _of_type(resources, "AWS::Lambda::EventSourceMapping")
    assert sorted(m["FunctionName"]["Ref"] for m in mappings.values()) == sorted(
        [
            function_ids["ingestion"],
            function_ids["task_lifecycle"],
            function_ids["graph_fetch"],
            function_ids["meta_events"],
            function_ids["webhook_delivery"],
        ]
    )
    for mapping in mappings.values():
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        # webhook_delivery posts a batch one endpoint after another: smaller batches (OutboundWebhooks)
        assert mapping["BatchSize"] == (5 if mapping["FunctionName"]["Ref"] == function_ids["webhook_delivery"] else 10)
        assert mapping["ScalingConfig"] == {"MaximumConcurrency": 5}


def test_graph_fetch_consumes_the_graph_fetch_queue_which_has_its_own_dlq(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    (mapping,) = [
        m
        for m in _of_type(resources, "AWS::Lambda::EventSourceMapping").values()
        if m["FunctionName"]["Ref"] == function_ids["graph_fetch"]
    ]
    queue_id = mapping["EventSourceArn"]["Fn::GetAtt"][0]
    assert queue_id.startswith("MessagingGraphFetchQueue")
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    dlq_id = resources[queue_id]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert dlq_id.startswith("MessagingGraphFetchDeadLetterQueue")


def test_visibility_timeout_is_at_least_six_times_the_consumer_timeout(resources: dict[str, Any]) -> None:
    mappings = _of_type(resources, "AWS::Lambda::EventSourceMapping")
    assert mappings
    for mapping in mappings.values():
        queue = resources[mapping["EventSourceArn"]["Fn::GetAtt"][0]]["Properties"]
        function = resources[mapping["FunctionName"]["Ref"]]["Properties"]
        assert queue["VisibilityTimeout"] >= 6 * function["Timeout"]


def test_domain_events_rule_routes_leadcrm_and_platform_sources_to_the_task_lifecycle_queue(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    (bus_id,) = _of_type(resources, "AWS::Events::EventBus")
    # the bus's one rule (SES's events arrive on the default bus: tests/infra/conversations/test_infra_ses_events)
    (rule,) = [r for r in _of_type(resources, "AWS::Events::Rule").values() if r["EventBusName"] == {"Ref": bus_id}]
    assert rule["EventPattern"] == {"source": [{"prefix": "leadcrm"}, {"prefix": "platform"}]}
    (target,) = rule["Targets"]
    task_lifecycle_queues = [
        m["EventSourceArn"]["Fn::GetAtt"][0]
        for m in _of_type(resources, "AWS::Lambda::EventSourceMapping").values()
        if m["FunctionName"]["Ref"] == function_ids["task_lifecycle"]
    ]
    assert target["Arn"] == {"Fn::GetAtt": [task_lifecycle_queues[0], "Arn"]}
    assert "DeadLetterConfig" in target


def _schedule_for(resources: dict[str, Any], job: str) -> dict[str, Any]:
    (schedule,) = [
        s
        for s in _of_type(resources, "AWS::Scheduler::Schedule").values()
        if json.loads(s["Target"]["Input"])["job"] == job
    ]
    return schedule


def test_every_job_task_lifecycle_knows_is_scheduled_in_aws_and_in_the_local_stack(resources: dict[str, Any]) -> None:
    from infra.local.stack import JOB_RATES_SECONDS
    from task_lifecycle.handler import JOBS

    scheduled = {
        json.loads(s["Target"]["Input"])["job"] for s in _of_type(resources, "AWS::Scheduler::Schedule").values()
    }
    assert scheduled == set(JOBS) == set(JOB_RATES_SECONDS)


def test_growing_tables_are_cleaned_every_15_minutes(resources: dict[str, Any]) -> None:
    assert _schedule_for(resources, "retention_cleanup")["ScheduleExpression"] == "rate(15 minutes)"


def test_outbox_relay_runs_every_minute(resources: dict[str, Any], function_ids: dict[str, str]) -> None:
    schedule = _schedule_for(resources, "outbox_relay")
    assert schedule["ScheduleExpression"] == "rate(1 minute)"
    assert schedule["State"] == "ENABLED"
    target = schedule["Target"]
    assert target["Arn"] == {"Fn::GetAtt": [function_ids["task_lifecycle"], "Arn"]}
    assert json.loads(target["Input"]) == {"job": "outbox_relay"}
    role = resources[target["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
