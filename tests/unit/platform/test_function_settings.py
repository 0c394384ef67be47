"""Each function checks what it needs when it starts: one SettingsError naming every missing variable and
what it is for; the local stand-ins of a secret's ARN count; nothing is checked outside Lambda."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest

from leadcrm.platform.config import get_settings
from leadcrm.platform.environment import SettingsError, at_cold_start

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
DATABASE_FUNCTIONS = ("api", "ingestion", "task_lifecycle", "migrations", "admin")
EVERY_VARIABLE = (
    "DATABASE_URL",
    "DB_AUTH_MODE",
    "DB_HOST",
    "DB_PORT",
    "DB_NAME",
    "DB_USER",
    "DB_SECRET_ARN",
    "DB_POOL_SIZE",
    "DB_SSL",
    "EVENT_BUS_NAME",
    "INGESTION_QUEUE_URL",
    "GRAPH_FETCH_QUEUE_URL",
    "WEBHOOK_BODIES_BUCKET",
    "LEAD_IMPORTS_BUCKET",
    "META_SECRET_ARN",
    "META_APP_SECRET",
    "META_VERIFY_TOKEN",
    "EMAIL_SIGNING_SECRET_ARN",
    "EMAIL_SIGNING_KEYS",
    "INBOUND_EMAIL_DOMAIN",
    "PSEUDONYM_SECRET_ARN",
    "PSEUDONYM_KEY",
    "MAIL_FROM",
    "SES_CONFIGURATION_SET",
    "PUBLIC_API_URL",
    "TICKET_SURVEY_URL",
    "AWS_LAMBDA_FUNCTION_NAME",
)
# What each function's check names when nothing is set.
NAMED_WHEN_EMPTY = {
    "api": [
        "DB_SECRET_ARN",
        "EVENT_BUS_NAME",
        "INGESTION_QUEUE_URL",
        "GRAPH_FETCH_QUEUE_URL",
        "LEAD_IMPORTS_BUCKET",
        "EMAIL_SIGNING_SECRET_ARN",
        "INBOUND_EMAIL_DOMAIN",
        "MAIL_FROM",
        "PSEUDONYM_SECRET_ARN",
        "SES_CONFIGURATION_SET",
        "WEBHOOK_DELIVERY_QUEUE_URL",
    ],
    "webhooks": ["INGESTION_QUEUE_URL", "GRAPH_FETCH_QUEUE_URL", "WEBHOOK_BODIES_BUCKET", "META_SECRET_ARN"],
    "ingestion": [
        "DB_SECRET_ARN",
        "EVENT_BUS_NAME",
        "INGESTION_QUEUE_URL",
        "GRAPH_FETCH_QUEUE_URL",
        "LEAD_IMPORTS_BUCKET",
        "WEBHOOK_BODIES_BUCKET",
        "EMAIL_SIGNING_SECRET_ARN",
        "INBOUND_EMAIL_DOMAIN",
        "PSEUDONYM_SECRET_ARN",
    ],
    "graph_fetch": ["INGESTION_QUEUE_URL", "WEBHOOK_BODIES_BUCKET"],
    "meta_events": ["INGESTION_QUEUE_URL"],
    "webhook_delivery": ["EVENT_BUS_NAME"],
    "task_lifecycle": [
        "DB_SECRET_ARN",
        "EVENT_BUS_NAME",
        "EMAIL_SIGNING_SECRET_ARN",
        "INBOUND_EMAIL_DOMAIN",
        "MAIL_FROM",
        "PSEUDONYM_SECRET_ARN",
        "SES_CONFIGURATION_SET",
        "PUBLIC_API_URL",
        "TICKET_SURVEY_URL",
        "WEBHOOK_DELIVERY_QUEUE_URL",
    ],
    "migrations": ["DB_SECRET_ARN"],
    "admin": ["DB_SECRET_ARN", "EVENT_BUS_NAME"],
}


@pytest.fixture(autouse=True)
def _empty_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in EVERY_VARIABLE:
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _check(function: str) -> None:
    get_settings.cache_clear()
    importlib.import_module(f"{function}.settings").check()


def _named(function: str) -> list[str]:
    with pytest.raises(SettingsError) as refused:
        _check(function)
    assert refused.value.function == function
    return [problem.variable for problem in refused.value.problems]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_an_empty_environment_is_refused_naming_every_variable_the_function_needs(function):
    assert _named(function) == NAMED_WHEN_EMPTY[function]


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_problem_says_what_the_variable_is_for(function):
    with pytest.raises(SettingsError) as refused:
        _check(function)
    assert all(problem.purpose and problem.reason for problem in refused.value.problems)
    assert str(refused.value).startswith(f"the {function} function cannot start: ")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_with_everything_set_the_check_passes(function, monkeypatch):
    for name in NAMED_WHEN_EMPTY[function]:
        monkeypatch.setenv(name, f"value-of-{name.lower()}")
    _check(function)


def test_the_webhook_receiver_may_take_its_meta_secrets_from_the_environment(monkeypatch):
    for name, value in {
        "INGESTION_QUEUE_URL": "q",
        "GRAPH_FETCH_QUEUE_URL": "g",
        "WEBHOOK_BODIES_BUCKET": "b",
        "META_APP_SECRET": "s",
        "META_VERIFY_TOKEN": "t",
    }.items():
        monkeypatch.setenv(name, value)
    _check("webhooks")


def test_one_stand_in_of_two_is_not_enough(monkeypatch):
    monkeypatch.setenv("META_APP_SECRET", "s")
    assert "META_SECRET_ARN" in _named("webhooks")


@pytest.mark.parametrize(("arn", "stand_in"), [("EMAIL_SIGNING_SECRET_ARN", "EMAIL_SIGNING_KEYS"),
                                               ("PSEUDONYM_SECRET_ARN", "PSEUDONYM_KEY")])  # fmt: skip
def test_a_local_key_stands_in_for_its_secret(monkeypatch, arn, stand_in):
    monkeypatch.setenv(stand_in, "local")
    assert arn not in _named("api")


@pytest.mark.parametrize("function", DATABASE_FUNCTIONS)
def test_an_invalid_typed_setting_is_named_beside_the_missing_ones(function, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@localhost/db")
    monkeypatch.setenv("DB_POOL_SIZE", "many")
    named = _named(function)
    assert named[0] == "DB_POOL_SIZE"
    assert "DB_SECRET_ARN" not in named  # the URL is a complete way to connect


def test_outside_lambda_nothing_is_checked_at_cold_start():
    ran: list[bool] = []
    at_cold_start(lambda: ran.append(True))
    assert ran == []


def test_in_lambda_the_check_runs_at_cold_start_and_its_error_propagates(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "leadcrm-webhooks")
    with pytest.raises(SettingsError):
        at_cold_start(importlib.import_module("webhooks.settings").check)
