"""Deployment settings read from CDK context: ``-c key=value`` on the CDK CLI, ``cdk.context.json``, or a
file given to ``infra/app.py --context-file``.

What differs per deployment (the sign-in issuer and audience, the dashboard origin, the mail sender and
domain) has no default anywhere: a placeholder would deploy a stack that admits no one or mails from a
domain nobody owns, and nothing would say so. A synth without them fails with one error naming every
missing or malformed value and what it is for. ``cdk.json`` keeps only defaults that are right for every
deployment (``databaseDeletionProtection``).

Who the alarms notify is optional (``alarmEmails``, ``alarmHttpsEndpoints``): a stack without them deploys,
and the synth warns that its alarms reach no one. When given, every value is checked the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parseaddr
from urllib.parse import urlsplit

from constructs import Construct
from email_validator import EmailNotValidError, validate_email

from infra.leadcrm_constructs.alarm_topic import AlarmSubscriptions
from infra.leadcrm_constructs.http_api import ApiSettings

_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def _is_hostname(value: str, *, min_labels: int) -> bool:
    labels = value.split(".")
    return len(value) <= 253 and len(labels) >= min_labels and all(_LABEL.match(label) for label in labels)


def _https_url(value: str) -> str | None:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname or value != value.strip():
        return "is not an https:// URL"
    if parts.query or parts.fragment or "?" in value or "#" in value or parts.username or parts.password:
        return "must have no query, fragment or credentials (it is compared with the tokens' iss exactly)"
    if not _is_hostname(parts.hostname, min_labels=2):
        return "does not name a valid host"
    return None


def _audience(value: str) -> str | None:
    if value != value.strip() or any(c.isspace() for c in value):
        return "must have no spaces (it is compared with the tokens' aud or client_id exactly)"
    return None


def _origin(value: str) -> str | None:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http(s):// origin"
    if parts.path or parts.query or parts.fragment or parts.username or "?" in value or "#" in value:
        return "must be an origin only, scheme://host[:port], with no path or trailing slash"
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when it is read
    except ValueError:
        return "has an invalid port"
    if not _is_hostname(parts.hostname, min_labels=1):
        return "does not name a valid host"
    return None


def _address(value: str) -> str | None:
    _, address = parseaddr(value)
    if not address or "@" not in address:
        return "is not an email address (an address, or 'Name <address>')"
    try:
        validate_email(address, check_deliverability=False)
    except EmailNotValidError as error:
        return f"is not a usable email address ({error})"
    return None


def _hostname(value: str) -> str | None:
    if "://" in value or "@" in value or not _is_hostname(value, min_labels=2):
        return "is not a domain name (just the host, e.g. mail.example.com)"
    return None


@dataclass(frozen=True)
class Setting:
    key: str
    purpose: str
    example: str
    problem: Callable[[str], str | None]  # what is wrong with a value, or None


REQUIRED: tuple[Setting, ...] = (
    Setting(
        "jwtIssuer",
        "the OIDC issuer of the sign-in tokens, exactly their `iss` claim; API Gateway's JWT authorizer reads "
        "its keys through <issuer>/.well-known/openid-configuration",
        "https://clerk.your-domain.com or https://cognito-idp.<region>.amazonaws.com/<userPoolId>",
        _https_url,
    ),
    Setting(
        "jwtAudience",
        "the audience the JWT authorizer accepts: the tokens' `aud` (Clerk: set it in a JWT template) or, "
        "when a token has no `aud`, its `client_id` (a Cognito access token: the app client id)",
        "leadcrm-dashboard",
        _audience,
    ),
    Setting(
        "dashboardOrigin",
        "the dashboard's origin, the only one the API's CORS allows",
        "https://app.your-domain.com",
        _origin,
    ),
    Setting(
        "mailFrom",
        "the sender of LeadCRM's own mail (conversations, bulk mail, the digest), a verified SES identity",
        "LeadCRM <no-reply@mail.your-domain.com>",
        _address,
    ),
    Setting(
        "inboundDomain",
        "the domain SES receives mail for (its MX points at SES inbound); reply and support addresses use it",
        "mail.your-domain.com",
        _hostname,
    ),
)


def _subscriber_email(value: str) -> str | None:
    if "<" in value or ">" in value or " " in value:
        return "is not a bare email address (SNS takes just the address, e.g. oncall@your-domain.com)"
    try:
        validate_email(value, check_deliverability=False)
    except EmailNotValidError as error:
        return f"is not a usable email address ({error})"
    return None


def _subscriber_url(value: str) -> str | None:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname or any(c.isspace() for c in value):
        return "is not an https:// URL (SNS delivers alarms to HTTPS endpoints only here)"
    if parts.username or parts.password:
        return "must carry no credentials (the template would hold them in clear; put a token in the path)"
    if parts.fragment or "#" in value:
        return "must have no fragment"
    if not _is_hostname(parts.hostname, min_labels=2):
        return "does not name a valid host"
    return None


@dataclass(frozen=True)
class ListSetting:
    key: str
    purpose: str
    example: str
    problem: Callable[[str], str | None]  # what is wrong with one item, or None


OPTIONAL_LISTS: tuple[ListSetting, ...] = (
    ListSetting(
        "alarmEmails",
        "who is mailed when an alarm fires or recovers (each address confirms the subscription SNS mails it); "
        "comma-separated, or a JSON list in a context file",
        "oncall@your-domain.com,ops@your-domain.com",
        _subscriber_email,
    ),
    ListSetting(
        "alarmHttpsEndpoints",
        "the HTTPS endpoints SNS posts alarm state changes to (a paging or chat integration that confirms "
        "SNS subscriptions); comma-separated, or a JSON list in a context file",
        "https://events.pagerduty.com/integration/<key>/enqueue",
        _subscriber_url,
    ),
)


FLAG_VALUES = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


class ConfigError(ValueError):
    """Every missing or malformed setting at once, so one synth tells the operator everything."""

    def __init__(self, problems: list[tuple[str, str, str, str]]) -> None:
        self.keys = [key for key, *_ in problems]
        lines = [
            f"LeadCRM cannot be synthesized: {len(problems)} deploy setting(s) missing or invalid. "
            "Pass each with -c key=value on the CDK CLI (or put it in cdk.context.json):"
        ]
        for key, problem, purpose, example in problems:
            lines.append(f"  - {key} {problem}. It is {purpose}. Example: {example}")
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class LeadCrmConfig:
    api: ApiSettings
    database_deletion_protection: bool
    mail_from: str  # the sender of LeadCRM's own mail (digests); a verified SES identity
    inbound_domain: str  # the domain SES receives mail for (its MX points at SES inbound)
    alarm_subscriptions: AlarmSubscriptions = AlarmSubscriptions()

    @classmethod
    def from_context(cls, scope: Construct) -> LeadCrmConfig:
        problems: list[tuple[str, str, str, str]] = []
        values: dict[str, str] = {}
        for setting in REQUIRED:
            raw = scope.node.try_get_context(setting.key)
            if raw is None or (isinstance(raw, str) and not raw.strip()):
                problems.append((setting.key, "is missing", setting.purpose, setting.example))
                continue
            if not isinstance(raw, str):
                problems.append((setting.key, f"must be a string, not {raw!r}", setting.purpose, setting.example))
                continue
            problem = setting.problem(raw)
            if problem:
                problems.append((setting.key, f"{raw!r} {problem}", setting.purpose, setting.example))
            values[setting.key] = raw
        protection = _flag(scope, "databaseDeletionProtection", default=True)
        if protection is None:
            problems.append(
                (
                    "databaseDeletionProtection",
                    f"{scope.node.try_get_context('databaseDeletionProtection')!r} is not true or false",
                    "whether the database cluster refuses to be deleted (false only for a throwaway stack)",
                    "true",
                )
            )
        lists = {setting.key: _list(scope, setting, problems) for setting in OPTIONAL_LISTS}
        if problems:
            raise ConfigError(problems)
        return cls(
            api=ApiSettings(
                jwt_issuer=values["jwtIssuer"],
                jwt_audience=values["jwtAudience"],
                dashboard_origin=values["dashboardOrigin"],
            ),
            database_deletion_protection=bool(protection),
            mail_from=values["mailFrom"],
            inbound_domain=values["inboundDomain"],
            alarm_subscriptions=AlarmSubscriptions(
                emails=lists["alarmEmails"], https_endpoints=lists["alarmHttpsEndpoints"]
            ),
        )


def _list(scope: Construct, setting: ListSetting, problems: list[tuple[str, str, str, str]]) -> tuple[str, ...]:
    """The setting's items (none when absent or blank), each checked; duplicates kept once, in order."""
    raw = scope.node.try_get_context(setting.key)
    if raw is None:
        return ()
    if isinstance(raw, str):
        items = [item.strip() for item in raw.split(",")]
    elif isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        items = [item.strip() for item in raw]
    else:
        problems.append(
            (
                setting.key,
                f"must be a comma-separated string or a list of strings, not {raw!r}",
                setting.purpose,
                setting.example,
            )
        )
        return ()
    items = [item for item in items if item]
    # an address is the same whatever its case; a URL's path is not
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(item.lower() if setting.key == "alarmEmails" else item, item)
    unique = list(seen.values())
    for item in unique:
        problem = setting.problem(item)
        if problem:
            problems.append((setting.key, f"{item!r} {problem}", setting.purpose, setting.example))
    return tuple(unique)


def _flag(scope: Construct, key: str, *, default: bool) -> bool | None:
    """The flag's value; None when it is neither true nor false (a typo must not turn protection off)."""
    value = scope.node.try_get_context(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    # -c on the command line always passes strings
    return FLAG_VALUES.get(str(value).strip().lower())
