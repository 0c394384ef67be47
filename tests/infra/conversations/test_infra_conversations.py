"""Conversations in AWS: the signing key secret and who reads it, the inbound domain and sender in the
functions' environment, and the bulk_email schedule (the public unsubscribe route: test_infra_api)."""

from __future__ import annotations

import json
from typing import Any

SIGNING_READERS = ("api", "ingestion", "task_lifecycle")


def _env(resources: dict[str, Any], function_ids: dict[str, str], name: str) -> dict[str, Any]:
    return resources[function_ids[name]]["Properties"]["Environment"]["Variables"]


def test_the_signing_key_is_a_generated_secret(resources: dict[str, Any]) -> None:
    secrets = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::SecretsManager::Secret" and "signed reply" in r["Properties"].get("Description", "")
    ]
    assert len(secrets) == 1
    assert secrets[0]["GenerateSecretString"]["GenerateStringKey"] == "key"


def test_the_functions_that_sign_or_verify_addresses_read_the_key_and_know_the_domain(
    resources: dict[str, Any], function_ids: dict[str, str], policy_actions: dict[str, set[str]]
) -> None:
    for name in SIGNING_READERS:
        variables = _env(resources, function_ids, name)
        assert "EMAIL_SIGNING_SECRET_ARN" in variables, name
        assert variables["INBOUND_EMAIL_DOMAIN"] == "mail.leadcrm.example.com"
        assert "secretsmanager:GetSecretValue" in policy_actions[name], name
    assert "EMAIL_SIGNING_SECRET_ARN" not in _env(resources, function_ids, "webhooks")


def test_the_api_sends_conversation_mail_from_mail_from(
    resources: dict[str, Any], function_ids: dict[str, str]
) -> None:
    assert _env(resources, function_ids, "api")["MAIL_FROM"] == "LeadCRM <no-reply@leadcrm.example.com>"


def test_bulk_mail_links_to_the_apis_public_url(resources: dict[str, Any], function_ids: dict[str, str]) -> None:
    assert "PUBLIC_API_URL" in _env(resources, function_ids, "task_lifecycle")


def test_bulk_email_runs_every_minute(resources: dict[str, Any]) -> None:
    (schedule,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Scheduler::Schedule"
        and json.loads(r["Properties"]["Target"]["Input"])["job"] == "bulk_email"
    ]
    assert schedule["ScheduleExpression"] == "rate(1 minute)"
