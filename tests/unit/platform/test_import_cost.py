"""The webhook receiver and the graph_fetch function must stay cheap to start: no SQLAlchemy, no pydantic
(DESIGN.md, conventions). Neither touches the database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, sys
import {module}
print(json.dumps({{name: name in sys.modules for name in ("sqlalchemy", "pydantic", "boto3")}}))
"""


def _fresh_import(module: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "functions"), str(ROOT / "layers" / "core" / "python")]),
        **(extra_env or {}),
    }
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def _modules_loaded_by_a_fresh_import(
    module: str = "webhooks.handler", extra_env: dict[str, str] | None = None
) -> dict[str, bool]:
    result = _fresh_import(module, extra_env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# What Lambda and the stack give the two receivers (their settings are checked when the package is imported).
IN_LAMBDA = {
    "AWS_LAMBDA_FUNCTION_NAME": "leadcrm-receiver",
    "INGESTION_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/ingestion",
    "GRAPH_FETCH_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/graph-fetch",
    "WEBHOOK_BODIES_BUCKET": "webhook-bodies",
    "META_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:meta",
}


def test_importing_the_webhook_handler_loads_neither_sqlalchemy_nor_pydantic():
    loaded = _modules_loaded_by_a_fresh_import()
    assert loaded["sqlalchemy"] is False
    assert loaded["pydantic"] is False


def test_importing_the_webhook_handler_does_not_load_boto3_until_a_message_is_sent():
    assert _modules_loaded_by_a_fresh_import()["boto3"] is False


def test_importing_the_graph_fetch_handler_loads_neither_sqlalchemy_nor_pydantic():
    loaded = _modules_loaded_by_a_fresh_import("graph_fetch.handler")
    assert loaded["sqlalchemy"] is False
    assert loaded["pydantic"] is False


def test_importing_the_webhook_delivery_handler_loads_neither_sqlalchemy_nor_pydantic():
    loaded = _modules_loaded_by_a_fresh_import("webhook_delivery.handler")
    assert loaded["sqlalchemy"] is False
    assert loaded["pydantic"] is False


def test_in_lambda_the_receivers_check_their_settings_without_loading_pydantic_or_boto3():
    for module in ("webhooks.handler", "graph_fetch.handler"):
        loaded = _modules_loaded_by_a_fresh_import(module, IN_LAMBDA)
        assert loaded == {"sqlalchemy": False, "pydantic": False, "boto3": False}, module


def test_in_lambda_a_receiver_missing_a_variable_fails_its_cold_start_naming_it():
    result = _fresh_import("webhooks.handler", {**IN_LAMBDA, "GRAPH_FETCH_QUEUE_URL": ""})
    assert result.returncode != 0
    assert "SettingsError: the webhooks function cannot start: GRAPH_FETCH_QUEUE_URL" in result.stderr


@pytest.mark.parametrize(
    ("package", "first_named"),
    [("api", "DB_SECRET_ARN"), ("ingestion", "DB_SECRET_ARN"), ("task_lifecycle", "DB_SECRET_ARN"),
     ("migrations", "DB_SECRET_ARN"), ("admin", "DB_SECRET_ARN"), ("graph_fetch", "INGESTION_QUEUE_URL"),
     ("meta_events", "INGESTION_QUEUE_URL"), ("webhook_delivery", "EVENT_BUS_NAME")],
)  # fmt: skip
def test_in_lambda_every_function_checks_its_settings_when_its_package_is_imported(package, first_named):
    unset = {name: "" for name in (*IN_LAMBDA, "DATABASE_URL", "DB_AUTH_MODE", "DB_SECRET_ARN", "EVENT_BUS_NAME")}
    result = _fresh_import(package, {**unset, "AWS_LAMBDA_FUNCTION_NAME": f"leadcrm-{package}"})
    assert result.returncode != 0
    assert f"the {package} function cannot start: {first_named} (" in result.stderr


DATABASE_FUNCTIONS_BUT_THE_API = ("ingestion.handler", "task_lifecycle.handler", "migrations.handler", "admin.handler")


@pytest.mark.parametrize("module", DATABASE_FUNCTIONS_BUT_THE_API)
def test_the_database_functions_but_the_api_load_no_pydantic(module):
    """Their settings are checked by the standard library (leadcrm.platform.config); only the API validates
    bodies with pydantic."""
    assert _modules_loaded_by_a_fresh_import(module)["pydantic"] is False
