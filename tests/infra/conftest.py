"""Infrastructure tests: the CDK app is synthesized once per session and inspected as a template.

Synthesis takes a few seconds (a Node.js process runs aws-cdk-lib), so every test shares one app, one
stack and one ``Template``. Nothing here needs AWS credentials, Docker, the CDK CLI or a database.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# jsii prints a banner for Node.js versions it considers deprecated; the synthesized output is unaffected.
# (For an end-of-life Node.js the variable is JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=<major>.)
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


# The session-wide, autouse fixtures of tests/conftest.py (a migrated PostgreSQL database, faked AWS
# settings of the application) serve the unit and integration tests; the CDK app uses neither, so
# these same-named fixtures replace them for this directory only.
@pytest.fixture(scope="session", autouse=True)
def database_url() -> Iterator[None]:
    yield None


@pytest.fixture(scope="session", autouse=True)
def fake_aws_environment() -> Iterator[None]:
    yield None


@pytest.fixture(autouse=True)
def _forget_aws_clients_and_settings() -> Iterator[None]:
    yield None


# The explicit context every infra test synthesizes with (cdk.json holds no deployment's values).
TEST_CONTEXT_FILE = REPO_ROOT / "infra" / "test-context.json"


@pytest.fixture(scope="session")
def synth_context() -> dict[str, Any]:
    from infra.app import read_context_file

    return read_context_file(TEST_CONTEXT_FILE)


@pytest.fixture(scope="session")
def app_and_stack(synth_context: dict[str, Any]) -> tuple[Any, Any]:
    from infra.app import build_app

    return build_app(context=synth_context)


@pytest.fixture(scope="session")
def stack(app_and_stack: tuple[Any, Any]) -> Any:
    return app_and_stack[1]


@pytest.fixture(scope="session")
def template(stack: Any) -> Any:
    from aws_cdk.assertions import Template

    return Template.from_stack(stack)


@pytest.fixture(scope="session")
def resources(template: Any) -> dict[str, dict[str, Any]]:
    """The synthesized ``Resources`` section, for checks that are simpler in plain Python."""
    return template.to_json()["Resources"]


# (test modules keep their own copies: pytest imports conftest files as plugins, not as modules to import from)
HANDLERS = {
    "api": "api.handler.lambda_handler",
    "webhooks": "webhooks.handler.lambda_handler",
    "ingestion": "ingestion.handler.lambda_handler",
    "graph_fetch": "graph_fetch.handler.lambda_handler",
    "meta_events": "meta_events.handler.lambda_handler",
    "webhook_delivery": "webhook_delivery.handler.lambda_handler",
    "task_lifecycle": "task_lifecycle.handler.lambda_handler",
    "migrations": "migrations.handler.lambda_handler",
    "admin": "admin.handler.lambda_handler",
}


@pytest.fixture(scope="session")
def function_ids(resources: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Logical id of each of our functions, by short name (``api``, ``webhooks``, ...)."""
    by_handler = {
        resource["Properties"]["Handler"]: logical_id
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    return {name: by_handler[handler] for name, handler in HANDLERS.items()}


@pytest.fixture(scope="session")
def policy_actions(resources: dict[str, dict[str, Any]], function_ids: dict[str, str]) -> dict[str, set[str]]:
    """Every IAM action granted to each function's role through its inline (default) policy."""
    role_of = {
        name: resources[logical_id]["Properties"]["Role"]["Fn::GetAtt"][0] for name, logical_id in function_ids.items()
    }
    actions: dict[str, set[str]] = {name: set() for name in function_ids}
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        roles = {role["Ref"] for role in resource["Properties"]["Roles"]}
        for name, role in role_of.items():
            if role in roles:
                for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                    granted = statement["Action"]
                    actions[name].update([granted] if isinstance(granted, str) else granted)
    return actions
