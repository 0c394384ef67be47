"""The app as a whole: cdk-nag, context handling, outputs and the code assets (alarms: test_infra_observability)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Annotations, Match, Template

from infra.config import LeadCrmConfig


def test_cdk_nag_reports_no_unsuppressed_errors(stack: Any, template: Template) -> None:
    annotations = Annotations.from_stack(stack)
    errors = annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [f"{e.id}: {e.entry.data}" for e in errors] == []
    warnings = annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*|CdkNagValidationFailure.*"))
    assert [f"{w.id}: {w.entry.data}" for w in warnings] == []


def test_context_values_and_overrides() -> None:
    app = cdk.App(
        context={
            "jwtIssuer": "https://clerk.example.org",
            "jwtAudience": "dash",
            "dashboardOrigin": "https://app.example.org",
            "databaseDeletionProtection": "false",  # -c passes strings
            "mailFrom": "Studio CRM <crm@studio.example.org>",
            "inboundDomain": "in.studio.example.org",
        }
    )
    config = LeadCrmConfig.from_context(app)
    assert config.api.jwt_issuer == "https://clerk.example.org"
    assert config.api.jwt_audience == "dash"
    assert config.api.dashboard_origin == "https://app.example.org"
    assert config.database_deletion_protection is False
    assert config.mail_from == "Studio CRM <crm@studio.example.org>"
    assert config.inbound_domain == "in.studio.example.org"


def test_outputs(template: Template) -> None:
    outputs = template.to_json()["Outputs"]
    assert {"ApiUrl", "WebhookUrl", "EventBusName"} <= set(outputs)


def test_code_assets_leave_interpreter_caches_behind(app_and_stack: tuple[Any, Any], resources: dict[str, Any]) -> None:
    app, stack = app_and_stack
    assembly = app.synth()  # already synthesized for the template: returns the same assembly
    manifest = json.loads((Path(assembly.directory) / f"{stack.artifact_id}.assets.json").read_text())
    source_of = {asset_hash: asset["source"]["path"] for asset_hash, asset in manifest["files"].items()}
    python_keys = {
        (r["Properties"].get("Code") or r["Properties"]["Content"])["S3Key"]
        for r in resources.values()
        if (r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Runtime") == "python3.12")
        or r["Type"] == "AWS::Lambda::LayerVersion"
    }
    asset_dirs = {Path(assembly.directory) / source_of[key.removesuffix(".zip")] for key in python_keys}
    assert len(asset_dirs) == 3  # the functions/ asset, the core layer and the dependencies layer
    for directory in asset_dirs:
        assert directory.is_dir()
        assert not list(directory.rglob("__pycache__")) and not list(directory.rglob("*.pyc"))
