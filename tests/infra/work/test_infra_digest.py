"""The morning digest in AWS: scheduled every 15 minutes, and only task_lifecycle may send mail (SES)."""

from __future__ import annotations

import json
from typing import Any


def test_the_daily_digest_runs_every_15_minutes(resources: dict[str, Any]) -> None:
    (schedule,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Scheduler::Schedule"
        and json.loads(r["Properties"]["Target"]["Input"])["job"] == "daily_digest"
    ]
    assert schedule["ScheduleExpression"] == "rate(15 minutes)"


def test_only_task_lifecycle_and_the_api_may_send_mail(policy_actions: dict[str, set[str]]) -> None:
    # task_lifecycle: the digest and bulk email; the API: conversation mail (issue 7).
    senders = {name for name, actions in policy_actions.items() if any(a.startswith("ses:") for a in actions)}
    assert senders == {"task_lifecycle", "api"}
    for sender in senders:
        assert {a for a in policy_actions[sender] if a.startswith("ses:")} == {"ses:SendEmail"}


def test_the_digest_sender_comes_from_the_mail_from_context_value(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    task_lifecycle = resources[function_ids["task_lifecycle"]]["Properties"]
    assert task_lifecycle["Environment"]["Variables"]["MAIL_FROM"] == "LeadCRM <no-reply@leadcrm.example.com>"


def test_the_isolated_subnets_reach_the_ses_api_through_an_endpoint(resources: dict[str, Any]) -> None:
    services = [
        r["Properties"]["ServiceName"]
        for r in resources.values()
        if r["Type"] == "AWS::EC2::VPCEndpoint" and r["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert any("email" in json.dumps(name) for name in services)
