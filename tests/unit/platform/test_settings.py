"""The database functions' settings: read from the environment once, validated, and refused with one message
that names every variable at fault and what it is for, never its value."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from leadcrm.platform.config import DatabaseSettings, check_settings, get_settings
from leadcrm.platform.environment import Required, SettingsError

VARIABLES = (
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
    "EVENT_SOURCE",
    "SOME_BUCKET",
)
IAM = {"DB_AUTH_MODE": "iam", "DB_HOST": "proxy.example", "DB_USER": "leadcrm", "EVENT_BUS_NAME": "bus"}


@pytest.fixture(autouse=True)
def _empty_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _given(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()


def _refusal(**kwargs: object) -> SettingsError:
    with pytest.raises(SettingsError) as refused:
        check_settings("api", **kwargs)  # type: ignore[arg-type]
    return refused.value


def _variables(error: SettingsError) -> list[str]:
    return [problem.variable for problem in error.problems]


def test_an_empty_environment_names_the_secret_and_the_bus_in_one_message():
    error = _refusal()
    assert _variables(error) == ["DB_SECRET_ARN", "EVENT_BUS_NAME"]
    assert str(error).startswith("the api function cannot start: ")
    assert "the EventBridge bus events are published to" in str(error)


def test_iam_auth_needs_the_proxy_host_and_the_user(monkeypatch):
    _given(monkeypatch, DB_AUTH_MODE="iam", EVENT_BUS_NAME="bus")
    error = _refusal()
    assert _variables(error) == ["DB_HOST", "DB_USER"]
    assert "needed by DB_AUTH_MODE iam" in str(error)


def test_the_iam_settings_of_the_stack_are_complete(monkeypatch):
    _given(monkeypatch, **IAM)
    database = check_settings("api").database
    assert (database.auth_mode, database.host, database.user, database.port, database.name) == (
        "iam",
        "proxy.example",
        "leadcrm",
        5432,
        "leadcrm",
    )
    assert database.ssl is True and database.pool_size == 1


def test_a_database_url_wins_over_the_auth_mode_and_turns_tls_off_by_default(monkeypatch):
    _given(monkeypatch, DATABASE_URL="postgresql://u:p@localhost/db", DB_AUTH_MODE="iam", EVENT_BUS_NAME="bus")
    database = check_settings("api").database
    assert (database.auth_mode, database.ssl) == ("url", False)


def test_db_ssl_may_turn_tls_back_on_for_a_url(monkeypatch):
    _given(monkeypatch, DATABASE_URL="postgresql://u:p@db.example/db", DB_SSL="true", EVENT_BUS_NAME="bus")
    assert check_settings("api").database.ssl is True


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("DB_PORT", "five", "is invalid"),
        ("DB_PORT", "70000", "is invalid"),
        ("DB_POOL_SIZE", "0", "is invalid"),
        ("DB_SSL", "maybe", "is invalid"),
        ("DB_AUTH_MODE", "kerberos", "is invalid"),
        ("EVENT_BUS_NAME", "", "is not set"),
    ],
)
def test_an_unusable_value_is_refused_naming_its_variable(monkeypatch, variable, value, reason):
    _given(monkeypatch, **{**IAM, variable: value})
    error = _refusal()
    assert _variables(error) == [variable]
    assert reason in str(error)


def test_problems_of_both_parts_are_reported_together(monkeypatch):
    _given(monkeypatch, **{**IAM, "DB_PORT": "x", "EVENT_BUS_NAME": ""})
    assert _variables(_refusal()) == ["DB_PORT", "EVENT_BUS_NAME"]


def test_the_message_never_repeats_a_value(monkeypatch):
    _given(monkeypatch, DATABASE_URL="postgresql://u:hunter2@localhost/db", DB_POOL_SIZE="hunter3")
    message = str(_refusal())
    assert "hunter2" not in message and "hunter3" not in message
    assert "DB_POOL_SIZE" in message


def test_a_migrations_style_check_needs_no_event_bus(monkeypatch):
    _given(monkeypatch, DATABASE_URL="postgresql://u:p@localhost/db")
    assert check_settings("migrations", event_bus=False).database.auth_mode == "url"


def test_presence_requirements_join_the_same_message(monkeypatch):
    _given(monkeypatch, **IAM)
    error = _refusal(required=(Required("SOME_BUCKET", "where files go"),))
    assert str(error) == "the api function cannot start: SOME_BUCKET (where files go) is not set"


def test_the_event_source_defaults_to_leadcrm(monkeypatch):
    _given(monkeypatch, **IAM)
    assert (get_settings().event_bus_name, get_settings().event_source) == ("bus", "leadcrm")


def test_settings_are_read_once_until_the_cache_is_cleared(monkeypatch):
    _given(monkeypatch, **IAM)
    first = get_settings().database
    monkeypatch.setenv("DB_HOST", "elsewhere.example")
    assert get_settings().database is first
    get_settings.cache_clear()
    assert get_settings().database.host == "elsewhere.example"


def test_a_part_nobody_needs_is_not_validated(monkeypatch):
    _given(monkeypatch, **{**IAM, "EVENT_BUS_NAME": ""})
    assert get_settings().database.host == "proxy.example"  # the bus is checked when it is first used


def test_settings_can_be_given_by_field_name_for_an_engine_of_ones_own():
    settings = DatabaseSettings(auth_mode="iam", host="h", user="u", port=6432, ssl=False)
    assert (settings.auth_mode, settings.port, settings.ssl, settings.url) == ("iam", 6432, False, None)


def test_a_variable_set_to_nothing_counts_as_not_set(monkeypatch):
    _given(monkeypatch, **{**IAM, "DB_NAME": "", "DB_PORT": ""})
    database = check_settings("api").database
    assert (database.name, database.port) == ("leadcrm", 5432)
