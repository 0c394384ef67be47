"""The pseudonym key and the qualification jobs in the synthesized template."""

from __future__ import annotations

import json
from typing import Any


def _of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {logical_id: r for logical_id, r in resources.items() if r["Type"] == kind}


def test_every_function_that_dedups_leads_reads_the_pseudonym_key(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    (secret_id,) = [i for i in _of_type(resources, "AWS::SecretsManager::Secret") if i.startswith("PseudonymKey")]
    assert resources[secret_id]["DeletionPolicy"] == "Retain"  # the tokens of erased people depend on it
    for name in ("api", "ingestion", "task_lifecycle"):
        variables = resources[function_ids[name]]["Properties"]["Environment"]["Variables"]
        assert variables["PSEUDONYM_SECRET_ARN"] == {"Ref": secret_id}
    webhooks = resources[function_ids["webhooks"]]["Properties"]["Environment"]["Variables"]
    assert "PSEUDONYM_SECRET_ARN" not in webhooks


def test_the_qualification_jobs_are_scheduled(resources: dict[str, Any]) -> None:
    rates = {
        json.loads(s["Properties"]["Target"]["Input"])["job"]: s["Properties"]["ScheduleExpression"]
        for s in _of_type(resources, "AWS::Scheduler::Schedule").values()
    }
    assert rates["rescore_leads"] == "rate(5 minutes)"
    assert rates["nurture_reevaluation"] == "rate(1 hour)"
    assert rates["merge_snapshot_purge"] == "rate(1 hour)"
