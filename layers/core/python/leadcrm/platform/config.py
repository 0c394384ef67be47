"""The typed settings of the database functions, read from the environment and validated once per process.

Each field is read from its variable and checked here: a port that is no number, an unknown DB_AUTH_MODE
or a missing DB_HOST is refused with the variable's name and what it is for (`SettingsError`), never a
KeyError or a connection attempt to nowhere, and never with the value (a DATABASE_URL holds a password).
Each part is validated on its first use and kept (`get_settings` is cached; tests that change the
environment call `get_settings.cache_clear()`); a function checks the parts it needs when it starts
(`check_settings`, called from functions/<name>/settings.py).

Standard library only: these eleven variables need text, whole numbers in a range, a choice, a yes/no and
one rule across fields, and pydantic-settings (~80 ms) with pydantic (~70 ms) was the largest part of the
cold start of every database function but the API (ingestion, task_lifecycle, migrations, admin load no
pydantic otherwise). A variable set to "" counts as not set (CDK and shells write empty values for none).

The receivers outside the VPC (webhooks, graph_fetch) check their needs in `leadcrm.platform.environment`,
and nothing they import reaches this module.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from functools import cache, cached_property
from typing import Any, Literal, TypeVar

from leadcrm.platform.environment import Problem, Required, SettingsError, missing

AuthMode = Literal["url", "secret", "iam"]
AUTH_MODES: tuple[AuthMode, ...] = ("url", "secret", "iam")
# What each way of connecting cannot do without (by field name).
NEEDED_BY_AUTH_MODE: dict[str, tuple[str, ...]] = {"url": ("url",), "secret": ("secret_arn",), "iam": ("host", "user")}
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_REQUIRED: Any = object()  # a field with no default: its variable must be set


class Invalid(ValueError):
    """Why a value is unusable, in words that never repeat it."""


def text(value: str) -> str:
    if not value:
        raise Invalid("is empty")
    return value


def whole_number(low: int, high: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        try:
            number = int(value.strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError):
            raise Invalid("is invalid: not a whole number") from None
        if isinstance(value, bool) or not low <= number <= high:
            raise Invalid(f"is invalid: must be from {low} to {high}")
        return number

    return parse


def yes_or_no(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise Invalid("is invalid: must be true or false")


def auth_mode(value: Any) -> AuthMode:
    if value not in AUTH_MODES:
        raise Invalid(f"is invalid: must be one of {', '.join(AUTH_MODES)}")
    return value  # type: ignore[no-any-return]


def setting(variable: str, description: str, parse: Callable[[Any], Any] = text, default: Any = _REQUIRED) -> Any:
    """A field read from `variable` (checked by `parse`), or `default` when it is not set."""
    metadata = {"variable": variable, "description": description, "parse": parse}
    if default is _REQUIRED:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


S = TypeVar("S", bound="_FromTheEnvironment")


class _FromTheEnvironment:
    """A frozen dataclass of settings: `from_environment()` reads each field from its variable; the class
    itself takes the fields by name (an engine of one's own, tests), checked the same way."""

    def __post_init__(self) -> None:
        problems = []
        for spec in fields(self):  # type: ignore[arg-type]
            value = getattr(self, spec.name)
            if value is None:
                continue
            try:
                object.__setattr__(self, spec.name, spec.metadata["parse"](value))
            except Invalid as invalid:
                problems.append(_problem(spec, str(invalid)))
        if problems:
            raise SettingsError(problems)
        self._complete()

    def _complete(self) -> None:
        """Rules across fields, once every field is valid."""

    @classmethod
    def from_environment(cls: type[S], environ: Mapping[str, str] | None = None) -> S:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        problems = []
        for spec in fields(cls):  # type: ignore[arg-type]
            raw = environ.get(spec.metadata["variable"]) or None  # "" counts as not set
            if raw is None:
                if spec.default is MISSING:
                    problems.append(_problem(spec, "is not set"))
                continue
            try:
                values[spec.name] = spec.metadata["parse"](raw)
            except Invalid as invalid:
                problems.append(_problem(spec, str(invalid)))
        if problems:
            raise SettingsError(problems)
        return cls(**values)


def _problem(spec: Any, reason: str) -> Problem:
    return Problem(spec.metadata["variable"], spec.metadata["description"], reason)


@dataclass(frozen=True)
class DatabaseSettings(_FromTheEnvironment):
    """How the engine reaches PostgreSQL: a URL (local stack, tests), or RDS Proxy with the credentials of a
    Secrets Manager secret (`secret`) or an IAM token minted per connection (`iam`)."""

    url: str | None = setting("DATABASE_URL", "a PostgreSQL URL; when set it wins over DB_*", default=None)
    auth_mode: AuthMode = setting("DB_AUTH_MODE", "how to authenticate: secret or iam", auth_mode, "secret")
    host: str | None = setting("DB_HOST", "the RDS Proxy endpoint", default=None)
    port: int = setting("DB_PORT", "the database port", whole_number(1, 65535), 5432)
    name: str = setting("DB_NAME", "the database name", default="leadcrm")
    user: str | None = setting("DB_USER", "the database user of IAM auth", default=None)
    secret_arn: str | None = setting("DB_SECRET_ARN", "the secret with the database credentials", default=None)
    pool_size: int = setting("DB_POOL_SIZE", "connections per process", whole_number(1, 64), 1)
    # TLS is verified unless a DATABASE_URL names the database (a local server has no certificate): None
    # until __post_init__ sets that default.
    ssl: bool = setting("DB_SSL", "whether TLS is required and verified: true or false", yes_or_no, None)

    def _complete(self) -> None:
        if self.url:
            object.__setattr__(self, "auth_mode", "url")  # a URL wins
        if self.ssl is None:
            object.__setattr__(self, "ssl", not self.url)
        absent = [name for name in NEEDED_BY_AUTH_MODE[self.auth_mode] if getattr(self, name) is None]
        if absent:
            by_name = {spec.name: spec for spec in fields(self)}
            needed = f"is not set (needed by DB_AUTH_MODE {self.auth_mode})"
            raise SettingsError([_problem(by_name[name], needed) for name in absent])


@dataclass(frozen=True)
class EventBusSettings(_FromTheEnvironment):
    """Where domain events are published (the outbox relay and the publish after commit)."""

    bus_name: str = setting("EVENT_BUS_NAME", "the EventBridge bus events are published to")
    source: str = setting("EVENT_SOURCE", "the source of published events", default="leadcrm")


def _load(settings_class: type[S]) -> S:
    """The part read from the environment, or SettingsError naming each variable at fault."""
    return settings_class.from_environment()


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
