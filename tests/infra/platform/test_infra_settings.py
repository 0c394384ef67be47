"""Every function starts with the environment the stack gives it: its cold-start settings check (functions/
<name>/settings.py) passes on exactly the variables of its template, and fails on any one of them less
that it requires."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from leadcrm.platform.config import get_settings
from leadcrm.platform.environment import SettingsError

FUNCTIONS = (
    "api",
    "webhooks",
    "ingestion",
    "graph_fetch",
    "meta_events",
    "webhook_delivery",
    "task_lifecycle",
    "migrations",
    "admin",
)
# What a developer's shell or the test session may have set, and the local stand-ins of the secrets: none of
# them exists in Lambda.
NOT_IN_LAMBDA = (
    "DATABASE_URL",
    "META_APP_SECRET",
    "META_VERIFY_TOKEN",
    "EMAIL_SIGNING_KEYS",
    "PSEUDONYM_KEY",
    "DB_POOL_SIZE",
    "DB_SSL",
    "EVENT_SOURCE",
)


def _environments(resources: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each function's variables; a CloudFormation reference stands for the value it resolves to."""
    found = {}
    for resource in resources.values():
        properties = resource.get("Properties", {})
        if resource["Type"] != "AWS::Lambda::Function" or not str(properties.get("Handler", "")).endswith(
            ".handler.lambda_handler"
        ):
            continue
        variables = properties.get("Environment", {}).get("Variables", {})
        name = properties["Handler"].split(".", 1)[0]
        found[name] = {key: value if isinstance(value, str) else "resolved-by-cloudformation"
                       for key, value in variables.items()}  # fmt: skip
    return found


@pytest.fixture(scope="module")
def environments(resources: dict[str, Any]) -> dict[str, dict[str, str]]:
    return _environments(resources)


@pytest.fixture
def lambda_environment(monkeypatch: pytest.MonkeyPatch, environments: dict[str, dict[str, str]]) -> Iterator[Any]:
    every_variable = {name for variables in environments.values() for name in variables}

    def apply(variables: dict[str, str]) -> None:
        for name in (*every_variable, *NOT_IN_LAMBDA):
            monkeypatch.delenv(name, raising=False)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()

    yield apply
    get_settings.cache_clear()


def _check(function: str) -> None:
    importlib.import_module(f"{function}.settings").check()


def test_the_template_has_the_nine_functions(environments):
    assert sorted(environments) == sorted(FUNCTIONS)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_function_starts_with_the_environment_the_stack_gives_it(function, environments, lambda_environment):
    lambda_environment(environments[function])
    _check(function)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_variable_the_function_requires_comes_from_the_stack(function, environments, lambda_environment):
    required = importlib.import_module(f"{function}.settings").REQUIRED
    for requirement in required:
        variables = dict(environments[function])
        assert requirement.variable in variables, requirement.variable
        del variables[requirement.variable]
        lambda_environment(variables)
        with pytest.raises(SettingsError) as refused:
            _check(function)
        assert [problem.variable for problem in refused.value.problems] == [requirement.variable]


@pytest.mark.parametrize("function", ("api", "ingestion", "task_lifecycle", "admin", "migrations"))
@pytest.mark.parametrize("variable", ("DB_HOST", "DB_USER", "EVENT_BUS_NAME"))
def test_a_database_function_does_not_start_without_its_proxy_user_or_bus(
    function, variable, environments, lambda_environment
):
    variables = dict(environments[function])
    if variable not in variables:  # migrations publishes no events: it has no bus to lose
        assert (function, variable) == ("migrations", "EVENT_BUS_NAME")
        return
    del variables[variable]
    lambda_environment(variables)
    with pytest.raises(SettingsError) as refused:
        _check(function)
    assert [problem.variable for problem in refused.value.problems] == [variable]
