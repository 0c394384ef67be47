"""Tickets in AWS: the sweep every minute, the support domain and the survey link in the functions' settings."""

from __future__ import annotations

import json
from typing import Any


def test_the_ticket_sweep_runs_every_minute(resources: dict[str, Any]) -> None:
    (schedule,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Scheduler::Schedule"
        and json.loads(r["Properties"]["Target"]["Input"])["job"] == "ticket_sweep"
    ]
    assert schedule["ScheduleExpression"] == "rate(1 minute)"


def test_the_functions_that_name_or_read_support_addresses_know_the_inbound_domain(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    domains = {
        name: resources[function_ids[name]]["Properties"]["Environment"]["Variables"].get("INBOUND_EMAIL_DOMAIN")
        for name in ("api", "ingestion", "task_lifecycle")
    }
    assert len(set(domains.values())) == 1 and None not in domains.values()


def test_survey_links_point_at_the_public_survey_route_of_the_api(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    url = resources[function_ids["task_lifecycle"]]["Properties"]["Environment"]["Variables"]["TICKET_SURVEY_URL"]
    rendered = json.dumps(url)
    assert "public/ticket-surveys/" in rendered and "execute-api" in rendered
