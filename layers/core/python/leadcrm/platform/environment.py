"""What a function needs from its environment, checked once when it starts, and the AWS region.

Standard library only: the webhook receiver and graph_fetch run outside the VPC and load no validation
library (an import contract), so their needs are presence checks written here. The database functions
validate their typed settings (the DB_* family, the event bus) with pydantic in
`leadcrm.platform.config`, and report problems in the same shape.

Each function lists what it needs in its own `settings.py` (functions/<name>/settings.py) and checks it
when Lambda imports its package (`at_cold_start`), before any handler code runs: a missing variable fails
the init phase with one message naming every variable at fault and what it is for, instead of a KeyError
on the first request that happens to need it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_REGION = "eu-west-1"


@dataclass(frozen=True)
class Problem:
    """One variable a function cannot start without: missing, or set to something unusable."""

    variable: str
    purpose: str
    reason: str = "is not set"

    def __str__(self) -> str:
        return f"{self.variable} ({self.purpose}) {self.reason}"


class SettingsError(RuntimeError):
    """The environment cannot run this function; the message names each variable at fault, never its value."""

    def __init__(self, problems: Sequence[Problem], function: str | None = None) -> None:
        self.problems = tuple(problems)
        self.function = function
        who = f"the {function} function cannot start" if function else "the settings are not usable"
        super().__init__(f"{who}: " + "; ".join(str(problem) for problem in self.problems))


@dataclass(frozen=True)
class Required:
    """A variable that must be set (and not empty), or else every one of `instead` (the local stand-ins of
    a secret's ARN, e.g. META_APP_SECRET and META_VERIFY_TOKEN for META_SECRET_ARN)."""

    variable: str
    purpose: str
    instead: tuple[str, ...] = ()

    def problem(self, environ: Mapping[str, str]) -> Problem | None:
        if environ.get(self.variable):
            return None
        if self.instead and all(environ.get(name) for name in self.instead):
            return None
        reason = "is not set" if not self.instead else f"is not set (nor {' and '.join(self.instead)})"
        return Problem(self.variable, self.purpose, reason)


def missing(requirements: Iterable[Required], environ: Mapping[str, str] | None = None) -> list[Problem]:
    env = os.environ if environ is None else environ
    return [problem for requirement in requirements if (problem := requirement.problem(env)) is not None]


def require(function: str, requirements: Iterable[Required], environ: Mapping[str, str] | None = None) -> None:
    """SettingsError naming every requirement the environment does not meet."""
    problems = missing(requirements, environ)
    if problems:
        raise SettingsError(problems, function)


def in_lambda() -> bool:
    """Lambda sets AWS_LAMBDA_FUNCTION_NAME in every execution environment; tests and the local stack do not."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def at_cold_start(check: Callable[[], None]) -> None:
    """Run a function's settings check during Lambda's init phase. Outside Lambda (tests, the local stack,
    the benchmarks) packages are imported before their environment is set, and the local defaults apply, so
    nothing is checked there; the checks have tests of their own."""
    if in_lambda():
        check()


def aws_region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


# The variables more than one function needs (README: Configuration), with what each is for.
INGESTION_QUEUE_URL = Required(
    "INGESTION_QUEUE_URL", "the ingestion queue: webhook leads, fetched Meta leads and CSV import jobs"
)
GRAPH_FETCH_QUEUE_URL = Required(
    "GRAPH_FETCH_QUEUE_URL", "the queue graph_fetch reads: Meta leadgen webhooks, WhatsApp sends and template syncs"
)
WEBHOOK_DELIVERY_QUEUE_URL = Required(
    "WEBHOOK_DELIVERY_QUEUE_URL", "the queue of signed outbound webhook deliveries webhook_delivery sends"
)
WEBHOOK_BODIES_BUCKET = Required("WEBHOOK_BODIES_BUCKET", "the bucket of webhook bodies too large for a message")
LEAD_IMPORTS_BUCKET = Required("LEAD_IMPORTS_BUCKET", "the bucket CSV lead imports are uploaded to")
EMAIL_SIGNING_KEY = Required(
    "EMAIL_SIGNING_SECRET_ARN", "the secret of the keys that sign reply addresses", instead=("EMAIL_SIGNING_KEYS",)
)
INBOUND_EMAIL_DOMAIN = Required("INBOUND_EMAIL_DOMAIN", "the domain of reply and support addresses")
PSEUDONYM_KEY = Required("PSEUDONYM_SECRET_ARN", "the secret of the pseudonym master key", instead=("PSEUDONYM_KEY",))
MAIL_FROM = Required("MAIL_FROM", "the verified SES identity mail is sent from")
SES_CONFIGURATION_SET = Required(
    "SES_CONFIGURATION_SET", "the SES configuration set every send names, so its delivery events are seen"
)
