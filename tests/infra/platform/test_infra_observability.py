"""Alarms reach a person: every alarm notifies one encrypted, TLS-only topic on ALARM and on OK; the topic's
subscriptions are the deploy configuration's; what is alarmed covers every function, queue, the outbox, the
database, the proxy and SES; one dashboard shows it all; and every alarm points at a runbook section."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match

from infra.leadcrm_constructs.alarm_topic import AlarmSubscriptions, AlarmTopic
from leadcrm.platform.outbox import BACKLOG_AGE_METRIC, METRICS_NAMESPACE

REPO_ROOT = Path(__file__).resolve().parents[3]
RUNBOOK = REPO_ROOT / "docs" / "runbook.md"


def _of_type(resources: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {logical_id: r["Properties"] for logical_id, r in resources.items() if r["Type"] == kind}


def _one(resources: dict[str, Any], kind: str) -> tuple[str, dict[str, Any]]:
    (item,) = _of_type(resources, kind).items()
    return item


@pytest.fixture(scope="module")
def alarms(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return _of_type(resources, "AWS::CloudWatch::Alarm")


@pytest.fixture(scope="module")
def topic_id(resources: dict[str, Any]) -> str:
    return _one(resources, "AWS::SNS::Topic")[0]


def _metric(alarm: dict[str, Any]) -> dict[str, Any]:
    """The one metric an alarm watches: namespace, name, dimensions, statistic and period."""
    if "MetricName" in alarm:
        return {
            "namespace": alarm["Namespace"],
            "name": alarm["MetricName"],
            "dimensions": {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])},
            "stat": alarm.get("Statistic") or alarm.get("ExtendedStatistic"),
            "period": alarm["Period"],
        }
    (query,) = [m for m in alarm["Metrics"] if m.get("ReturnData", True)]
    stat = query["MetricStat"]
    return {
        "namespace": stat["Metric"]["Namespace"],
        "name": stat["Metric"]["MetricName"],
        "dimensions": {d["Name"]: d["Value"] for d in stat["Metric"].get("Dimensions", [])},
        "stat": stat["Stat"],
        "period": stat["Period"],
    }


def _alarms_on(alarms: dict[str, dict[str, Any]], namespace: str, name: str) -> list[dict[str, Any]]:
    return [a for a in alarms.values() if (_metric(a)["namespace"], _metric(a)["name"]) == (namespace, name)]


def _alarm_on(alarms: dict[str, dict[str, Any]], namespace: str, name: str, **dimensions: Any) -> dict[str, Any]:
    (alarm,) = [a for a in _alarms_on(alarms, namespace, name) if _metric(a)["dimensions"] == dimensions]
    return alarm


# --- every alarm notifies -------------------------------------------------------------------------------


def test_every_alarm_notifies_the_alarm_topic_when_it_fires_and_when_it_recovers(
    alarms: dict[str, dict[str, Any]], topic_id: str
) -> None:
    assert len(alarms) >= 30
    for logical_id, alarm in alarms.items():
        assert alarm.get("ActionsEnabled", True) is True, logical_id
        assert alarm.get("AlarmActions") == [{"Ref": topic_id}], logical_id
        assert alarm.get("OKActions") == [{"Ref": topic_id}], logical_id


def test_every_alarm_is_named_after_the_stack_so_two_stacks_in_one_account_never_collide(
    alarms: dict[str, dict[str, Any]],
) -> None:
    names = [alarm["AlarmName"] for alarm in alarms.values()]
    assert all(name.startswith("LeadCrmStack-") for name in names)
    assert len(set(names)) == len(names)


def _github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_alarm_points_the_person_it_wakes_at_a_section_of_the_runbook(alarms: dict[str, dict[str, Any]]) -> None:
    sections = {_github_anchor(line.lstrip("#")) for line in RUNBOOK.read_text().splitlines() if line.startswith("#")}
    for logical_id, alarm in alarms.items():
        links = re.findall(r"Runbook: docs/runbook\.md#([\w-]+)", alarm["AlarmDescription"])
        assert len(links) == 1, logical_id
        assert links[0] in sections, f"{logical_id} points at #{links[0]}, which docs/runbook.md does not have"


# --- the topic and who it tells ---------------------------------------------------------------------------


def test_the_alarm_topic_is_encrypted_with_a_rotated_key_that_cloudwatch_may_use(resources: dict[str, Any]) -> None:
    _, topic = _one(resources, "AWS::SNS::Topic")
    key_id = topic["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = resources[key_id]["Properties"]
    assert resources[key_id]["Type"] == "AWS::KMS::Key"
    assert key["EnableKeyRotation"] is True
    (cloudwatch,) = [
        s for s in key["KeyPolicy"]["Statement"] if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert cloudwatch["Effect"] == "Allow"
    assert set(cloudwatch["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}


def test_the_alarm_topic_refuses_requests_without_tls_and_admits_this_accounts_alarms(
    resources: dict[str, Any], topic_id: str
) -> None:
    _, policy = _one(resources, "AWS::SNS::TopicPolicy")
    assert policy["Topics"] == [{"Ref": topic_id}]
    statements = policy["PolicyDocument"]["Statement"]
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Principal"] == "*"
    (allow,) = [s for s in statements if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert "ArnLike" in allow["Condition"]  # only alarms of this account and region


def test_the_topic_is_subscribed_exactly_by_the_addresses_and_endpoints_of_the_context(
    resources: dict[str, Any], topic_id: str, synth_context: dict[str, Any]
) -> None:
    subscriptions = _of_type(resources, "AWS::SNS::Subscription").values()
    assert all(s["TopicArn"] == {"Ref": topic_id} for s in subscriptions)
    emails = [e.strip() for e in synth_context["alarmEmails"].split(",")]
    endpoints = synth_context["alarmHttpsEndpoints"]
    assert sorted((s["Protocol"], s["Endpoint"]) for s in subscriptions) == sorted(
        [("email", e) for e in emails] + [("https", u) for u in endpoints]
    )


def test_a_topic_without_subscribers_deploys_but_the_synth_warns_that_alarms_reach_no_one() -> None:
    stack = cdk.Stack(cdk.App(), "Alone")
    AlarmTopic(stack, "AlarmTopic", subscribers=AlarmSubscriptions())

    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*reach no one.*"))

    assert len(warnings) == 1
    assert "alarmEmails" in warnings[0].entry.data


def test_the_stack_outputs_the_alarm_topic_and_the_dashboard(template: Any) -> None:
    assert {"AlarmTopicArn", "DashboardName"} <= set(template.to_json()["Outputs"])


# --- the dashboard --------------------------------------------------------------------------------------


def _dashboard_body(resources: dict[str, Any]) -> str:
    _, dashboard = _one(resources, "AWS::CloudWatch::Dashboard")
    parts = dashboard["DashboardBody"]["Fn::Join"][1]
    return "".join(p if isinstance(p, str) else repr(p) for p in parts)


def test_the_service_has_one_dashboard_with_a_section_for_everything_alarmed(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    body = _dashboard_body(resources)
    for section in ("HTTP API", "Functions", "Work queues", "Outbox", "Database", "RDS Proxy", "Email (SES)"):
        assert section in body
    for logical_id in function_ids.values():
        assert f"'Ref': '{logical_id}'" in body
    assert BACKLOG_AGE_METRIC in body


# --- what is alarmed ------------------------------------------------------------------------------------


def test_every_function_alarms_on_any_error_and_any_throttle(
    alarms: dict[str, dict[str, Any]], function_ids: dict[str, str]
) -> None:
    assert len(function_ids) == 9
    for logical_id in function_ids.values():
        for name in ("Errors", "Throttles"):
            alarm = _alarm_on(alarms, "AWS/Lambda", name, FunctionName={"Ref": logical_id})
            assert _metric(alarm)["stat"] == "Sum"
            assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")


def test_every_function_alarms_when_its_p99_duration_nears_its_own_timeout(
    alarms: dict[str, dict[str, Any]], resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    for logical_id in function_ids.values():
        alarm = _alarm_on(alarms, "AWS/Lambda", "Duration", FunctionName={"Ref": logical_id})
        timeout_ms = resources[logical_id]["Properties"]["Timeout"] * 1000
        assert _metric(alarm)["stat"] == "p99"
        assert alarm["Threshold"] == pytest.approx(0.8 * timeout_ms)
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"


def test_the_http_api_alarms_on_its_5xx_rate_and_its_p99_latency(
    alarms: dict[str, dict[str, Any]], resources: dict[str, Any]
) -> None:
    api_id, _ = _one(resources, "AWS::ApiGatewayV2::Api")
    dimensions = {"ApiId": {"Ref": api_id}, "Stage": "$default"}
    errors = _alarm_on(alarms, "AWS/ApiGateway", "5xx", **dimensions)
    assert _metric(errors)["stat"] == "Average"  # 5xx is 0 or 1 per request: its average is the rate
    assert errors["Threshold"] == 0.05
    latency = _alarm_on(alarms, "AWS/ApiGateway", "Latency", **dimensions)
    assert _metric(latency)["stat"] == "p99"
    assert latency["Threshold"] == 3000
    for alarm in (errors, latency):
        assert (alarm["DatapointsToAlarm"], alarm["EvaluationPeriods"]) == (3, 3)  # 15 minutes, not a blip


def _work_queues(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: q for k, q in _of_type(resources, "AWS::SQS::Queue").items() if "RedrivePolicy" in q}


def test_each_work_queue_alarms_when_its_oldest_message_outlives_its_retries(
    alarms: dict[str, dict[str, Any]], resources: dict[str, Any]
) -> None:
    queues = _work_queues(resources)
    assert len(queues) == 5  # ingestion, task-lifecycle, graph-fetch, meta-events, webhook delivery
    for logical_id, queue in queues.items():
        alarm = _alarm_on(
            alarms, "AWS/SQS", "ApproximateAgeOfOldestMessage", QueueName={"Fn::GetAtt": [logical_id, "QueueName"]}
        )
        retries = queue["RedrivePolicy"]["maxReceiveCount"] * queue["VisibilityTimeout"]
        assert alarm["Threshold"] == retries + 300
        assert alarm["TreatMissingData"] == "notBreaching"


def test_each_dead_letter_queue_alarms_on_its_first_message_within_a_minute(
    alarms: dict[str, dict[str, Any]], resources: dict[str, Any]
) -> None:
    for queue in _work_queues(resources).values():
        dlq = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        alarm = _alarm_on(
            alarms, "AWS/SQS", "ApproximateNumberOfMessagesVisible", QueueName={"Fn::GetAtt": [dlq, "QueueName"]}
        )
        assert (_metric(alarm)["stat"], _metric(alarm)["period"]) == ("Maximum", 60)
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")


def test_the_outbox_backlog_age_the_relay_publishes_is_alarmed_and_silence_counts_as_breaching(
    alarms: dict[str, dict[str, Any]], resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    relay_environment = resources[function_ids["task_lifecycle"]]["Properties"]["Environment"]["Variables"]
    alarm = _alarm_on(
        alarms, METRICS_NAMESPACE, BACKLOG_AGE_METRIC, service=relay_environment["POWERTOOLS_SERVICE_NAME"]
    )
    assert relay_environment["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
    assert _metric(alarm)["stat"] == "Maximum"
    assert alarm["Threshold"] == 300
    assert alarm["TreatMissingData"] == "breaching"


def test_aurora_alarms_near_its_maximum_capacity_on_cpu_and_on_connections(
    alarms: dict[str, dict[str, Any]], resources: dict[str, Any]
) -> None:
    cluster_id, cluster = _one(resources, "AWS::RDS::DBCluster")
    on_cluster = {"DBClusterIdentifier": {"Ref": cluster_id}}
    capacity = _alarm_on(alarms, "AWS/RDS", "ServerlessDatabaseCapacity", **on_cluster)
    assert capacity["Threshold"] == pytest.approx(0.9 * cluster["ServerlessV2ScalingConfiguration"]["MaxCapacity"])
    assert _alarm_on(alarms, "AWS/RDS", "CPUUtilization", **on_cluster)["Threshold"] == 80
    connections = _alarm_on(alarms, "AWS/RDS", "DatabaseConnections", **on_cluster)
    assert 0 < connections["Threshold"] < 901  # below Aurora's max_connections for 4 ACU


def test_rds_proxy_alarms_on_refused_clients_and_on_connections_it_could_not_open(
    alarms: dict[str, dict[str, Any]], resources: dict[str, Any]
) -> None:
    proxy_id, _ = _one(resources, "AWS::RDS::DBProxy")
    for name in ("ClientConnectionsSetupFailedAuth", "DatabaseConnectionsSetupFailed"):
        alarm = _alarm_on(alarms, "AWS/RDS", name, ProxyName={"Ref": proxy_id})
        assert _metric(alarm)["stat"] == "Sum"
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")


@pytest.mark.parametrize(
    ("name", "review_level"), [("Reputation.BounceRate", 0.05), ("Reputation.ComplaintRate", 0.001)]
)
def test_ses_reputation_is_alarmed_when_it_reaches_the_level_ses_reviews_an_account_at(
    alarms: dict[str, dict[str, Any]], name: str, review_level: float
) -> None:
    alarm = _alarm_on(alarms, "AWS/SES", name)  # account-wide: no dimensions
    assert alarm["Threshold"] == review_level
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
