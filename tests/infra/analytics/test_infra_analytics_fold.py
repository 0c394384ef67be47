"""The analytics fold (migration 0032): the leads writers queue are folded into the rollups every minute."""

from __future__ import annotations

import json
from typing import Any


def test_the_analytics_fold_runs_every_minute_on_task_lifecycle(resources: dict[str, Any]) -> None:
    (schedule,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Scheduler::Schedule"
        and json.loads(r["Properties"]["Target"]["Input"])["job"] == "analytics_fold"
    ]
    assert schedule["ScheduleExpression"] == "rate(1 minute)"
    assert "TaskLifecycle" in json.dumps(schedule["Target"]["Arn"])
