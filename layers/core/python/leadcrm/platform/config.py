"""The typed settings of the database functions, read from the environment and validated once per process.

pydantic checks them, each field read from its variable (its validation alias): a port that is no number,
an unknown DB_AUTH_MODE or a missing DB_HOST is refused with the variable's name and what it is for
(`SettingsError`), never a KeyError or a connection attempt to nowhere. Plain pydantic models fed
`os.environ` rather than pydantic-settings' BaseSettings: these fields need nothing it adds (no JSON-valued
variables, no .env files, no nested settings), and importing it cost every database function ~80 ms of
its cold start. Each part is validated on its first use and kept (`get_settings` is cached;
tests that change the environment call `get_settings.cache_clear()`); a function checks the parts it needs
when it starts (`check_settings`, called from functions/<name>/settings.py).

The receivers outside the VPC (webhooks, graph_fetch) load no pydantic: what they need is checked by
`leadcrm.platform.environment`, and nothing they import reaches this module.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import cache, cached_property
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from leadcrm.platform.environment import Problem, Required, SettingsError, missing

AuthMode = Literal["url", "secret", "iam"]
S = TypeVar("S", bound=BaseModel)

# Read from the whole environment (every other variable ignored), by the variables' exact names; or given by
# field name (an engine of one's own, tests).
_FROM_THE_ENVIRONMENT = ConfigDict(extra="ignore", frozen=True, validate_by_name=True, validate_by_alias=True)
# What each way of connecting cannot do without (by field name).
NEEDED_BY_AUTH_MODE: dict[str, tuple[str, ...]] = {"url": ("url",), "secret": ("secret_arn",), "iam": ("host", "user")}


class DatabaseSettings(BaseModel):
    """How the engine reaches PostgreSQL: a URL (local stack, tests), or RDS Proxy with the credentials of a
    Secrets Manager secret (`secret`) or an IAM token minted per connection (`iam`)."""

    model_config = _FROM_THE_ENVIRONMENT

    url: str | None = Field(
        None, validation_alias="DATABASE_URL", description="a PostgreSQL URL; when set it wins over DB_*"
    )
    auth_mode: AuthMode = Field(
        "secret",
        validation_alias="DB_AUTH_MODE",
        description="how to authenticate: secret or iam",
        validate_default=True,
    )
    host: str | None = Field(None, validation_alias="DB_HOST", description="the RDS Proxy endpoint")
    port: int = Field(5432, ge=1, le=65535, validation_alias="DB_PORT", description="the database port")
    name: str = Field("leadcrm", min_length=1, validation_alias="DB_NAME", description="the database name")
    user: str | None = Field(None, validation_alias="DB_USER", description="the database user of IAM auth")
    secret_arn: str | None = Field(
        None, validation_alias="DB_SECRET_ARN", description="the secret with the database credentials"
    )
    pool_size: int = Field(1, ge=1, le=64, validation_alias="DB_POOL_SIZE", description="connections per process")
    # TLS is verified unless a DATABASE_URL names the database (a local server has no certificate).
    ssl: bool = Field(
        default_factory=lambda data: not data.get("url"),
        validation_alias="DB_SSL",
        description="whether TLS is required and verified: true or false",
    )

    @field_validator("auth_mode")
    @classmethod
    def _a_url_wins(cls, value: AuthMode, info: ValidationInfo) -> AuthMode:
        return "url" if info.data.get("url") else value

    @model_validator(mode="after")
    def _complete(self) -> DatabaseSettings:
        absent = [name for name in NEEDED_BY_AUTH_MODE[self.auth_mode] if getattr(self, name) is None]
        if absent:
            raise PydanticCustomError(
                "needed_by_auth_mode", "needed by DB_AUTH_MODE {mode}", {"mode": self.auth_mode, "fields": absent}
            )
        return self


class EventBusSettings(BaseModel):
    """Where domain events are published (the outbox relay and the publish after commit)."""

    model_config = _FROM_THE_ENVIRONMENT

    bus_name: str = Field(
        min_length=1, validation_alias="EVENT_BUS_NAME", description="the EventBridge bus events are published to"
    )
    source: str = Field(
        "leadcrm", min_length=1, validation_alias="EVENT_SOURCE", description="the source of published events"
    )


def _environment() -> dict[str, Any]:
    """The process's variables; one set to "" counts as not set (CDK and shells write empty values for none)."""
    return {name: value for name, value in os.environ.items() if value != ""}


def _load(settings_class: type[S]) -> S:
    """The part read from the environment, or SettingsError naming each variable at fault (never its value:
    a DATABASE_URL holds a password)."""
    try:
        return settings_class.model_validate(_environment())
    except ValidationError as error:
        raise SettingsError(_problems(settings_class, error)) from None


def _problems(settings_class: type[BaseModel], error: ValidationError) -> list[Problem]:
    fields = settings_class.model_fields
    by_alias = {str(field.validation_alias): name for name, field in fields.items()}

    def problem(name: str, reason: str) -> Problem:
        field = fields[name]
        return Problem(str(field.validation_alias), field.description or name, reason)

    problems = []
    for detail in error.errors(include_input=False, include_url=False):
        if detail["type"] == "needed_by_auth_mode":
            context = detail.get("ctx") or {}
            problems += [problem(name, f"is not set ({detail['msg']})") for name in context.get("fields", ())]
            continue
        if detail["type"] == "default_factory_not_called":  # follows from another field's problem
            continue
        alias = str(detail["loc"][0]) if detail["loc"] else ""
        name = by_alias.get(alias, alias)
        if name not in fields:
            problems.append(Problem(alias or settings_class.__name__, "a setting", f"is invalid: {detail['msg']}"))
        elif detail["type"] == "missing":
            problems.append(problem(name, "is not set"))
        elif detail["type"] == "string_too_short":
            problems.append(problem(name, "is empty"))
        else:
            problems.append(problem(name, f"is invalid: {detail['msg']}"))
    return problems


class Settings:
    """The settings of this process. Each part is read and validated on first use, then kept: a function
    that never publishes needs no EVENT_BUS_NAME, and one that does fails at its cold start without it."""

    @cached_property
    def database(self) -> DatabaseSettings:
        return _load(DatabaseSettings)

    @cached_property
    def event_bus(self) -> EventBusSettings:
        return _load(EventBusSettings)

    @property
    def event_bus_name(self) -> str:
        return self.event_bus.bus_name

    @property
    def event_source(self) -> str:
        return self.event_bus.source


@cache
def get_settings() -> Settings:
    return Settings()


def check_settings(
    function: str, *, database: bool = True, event_bus: bool = True, required: Iterable[Required] = ()
) -> Settings:
    """Validate what `function` needs, now and once: SettingsError naming every variable at fault at once."""
    settings = get_settings()
    problems: list[Problem] = []
    parts = [name for name, needed in (("database", database), ("event_bus", event_bus)) if needed]
    for part in parts:
        try:
            getattr(settings, part)
        except SettingsError as error:
            problems += error.problems
    problems += missing(required)
    if problems:
        raise SettingsError(problems, function)
    return settings
