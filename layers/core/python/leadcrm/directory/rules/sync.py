"""The platform's directory events as LeadCRM reads them: parsed, bounded, and ordered by their version.

Pure: no SQL, no I/O. `parse_*` turns a platform `detail` (EventBridge, no envelope) into a frozen state or
raises `MalformedDetail` with the reason: a detail that is malformed now is malformed on every retry, so the
consumer logs the reason and acknowledges it (a permanent failure), it never retries it.

Versions: every `created`/`updated` carries `updatedAt`, the platform's version of the whole record. A version
applies only when it is strictly newer than the one applied last (`is_newer`): a replay (the same version)
and a late older one change nothing, whatever order they arrive in. A deletion is a tombstone on a separate
axis: it never clears, and the earliest deletion time is kept (`earliest`), so deletions commute with the
versions and with each other. That is what makes any permutation of one set of events end in one state
(`merge_membership` is that rule for a membership, and for one held before its user or organization exists).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from leadcrm.directory.rules import STAFF_ROLES, MembershipStatus, Role

MAX_ORGANIZATION_NAME = 200
MAX_PERSON_NAME = 200
MAX_AUTH_SUBJECT = 255
MAX_EMAIL = 320  # RFC 5321: 64 local + @ + 255 domain
MAX_LOCALE = 35  # BCP 47's practical bound
MAX_FEATURES = 100
MAX_FEATURE_NAME = 100
MAX_INSTANT = 64
YEARS = (1900, 2999)

LOCALE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+")


class MalformedDetail(ValueError):
    """A detail that can never be applied; `reason` says why (logged, never the values: no PII in logs)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class OrganizationState:
    """`organization.created` / `organization.updated`: the whole organization at `version`.

    `country_code` and `locale` are None when the platform has none: ours is then kept (never cleared)."""

    organization_id: uuid.UUID
    name: str
    timezone: str
    country_code: str | None
    locale: str | None
    features: frozenset[str]
    version: datetime

    def settings(self) -> dict[str, object]:
        """The shared settings this version names (directory.rules.SHARED_SETTINGS)."""
        changes: dict[str, object] = {"name": self.name, "timezone": self.timezone}
        if self.country_code is not None:
            changes["country_code"] = self.country_code
        if self.locale is not None:
            changes["locale"] = self.locale
        return changes


@dataclass(frozen=True)
class OrganizationDeletion:
    organization_id: uuid.UUID
    deleted_at: datetime


@dataclass(frozen=True)
class UserState:
    """`user.created` / `user.updated`: the whole user at `version` (None: the platform has no value)."""

    user_id: uuid.UUID
    auth_subject: str | None
    email: str | None
    first_name: str | None
    last_name: str | None
    version: datetime

    def to_detail(self) -> dict[str, Any]:
        return {
            "userId": str(self.user_id),
            "authSubject": self.auth_subject,
            "email": self.email,
            "firstName": self.first_name,
            "lastName": self.last_name,
            "updatedAt": self.version.isoformat(),
        }


@dataclass(frozen=True)
class MembershipState:
    """`membership.created` / `membership.updated`: the whole membership at `version`."""

    membership_id: uuid.UUID
    organization_id: uuid.UUID
    user_id: uuid.UUID
    role: Role
    status: MembershipStatus
    version: datetime

    def to_detail(self) -> dict[str, Any]:
        return {
            "membershipId": str(self.membership_id),
            "organizationId": str(self.organization_id),
            "userId": str(self.user_id),
            "role": self.role.value,
            "status": self.status.value,
            "updatedAt": self.version.isoformat(),
        }


@dataclass(frozen=True)
class MembershipDeletion:
    membership_id: uuid.UUID
    organization_id: uuid.UUID
    user_id: uuid.UUID | None
    deleted_at: datetime


@dataclass(frozen=True)
class MembershipStatusChange:
    """The platform's older `membership.status_changed`: the status alone. With `changed_at` it is a version
    like any other (a replay or an older one changes nothing); without, it is applied as it comes."""

    organization_id: uuid.UUID
    membership_id: uuid.UUID
    status: MembershipStatus
    changed_at: datetime | None
    changed_at_text: str | None  # as the platform spelled it: the handover's redelivery key (deals)
    deleted_at: datetime | None


@dataclass(frozen=True)
class MembershipRecord:
    """What is known of one membership: its newest version (None: only its deletion so far) and its tombstone."""

    state: MembershipState | None
    deleted_at: datetime | None


# -- versions -----------------------------------------------------------------------------------------------


def is_newer(version: datetime, current: datetime | None) -> bool:
    """Whether `version` may overwrite what `current` (the version applied last, None: none yet) wrote.
    Equal is not newer: a redelivery is a no-op."""
    return current is None or version > current


def earliest(first: datetime | None, second: datetime | None) -> datetime | None:
    """The tombstone kept when two deletions are seen: the earlier (a deletion never moves later or clears)."""
    if first is None or second is None:
        return first or second
    return min(first, second)


def merge_membership(
    record: MembershipRecord | None, state: MembershipState | None = None, deleted_at: datetime | None = None
) -> MembershipRecord:
    """`record` after one event: a newer `state` replaces the known one, a deletion joins the tombstone."""
    known = record.state if record is not None else None
    if state is not None and (known is None or is_newer(state.version, known.version)):
        known = state
    return MembershipRecord(state=known, deleted_at=earliest(record.deleted_at if record else None, deleted_at))


def is_active_staff(role: str | None, status: str | None, deleted_at: datetime | None) -> bool:
    """Active staff (owner, admin, coach; active; not deleted): who may hold open work (deals.owner_departure)."""
    return deleted_at is None and status == MembershipStatus.ACTIVE.value and role in STAFF_ROLES


# -- parsing ------------------------------------------------------------------------------------------------


def parse_organization(detail: Mapping[str, Any]) -> OrganizationState:
    """{organizationId, name, timezone, country?, locale?, features: [..], updatedAt}."""
    _require_object(detail)
    return OrganizationState(
        organization_id=_uuid(detail, "organizationId"),
        name=_required(_text(detail, "name", MAX_ORGANIZATION_NAME), "name"),
        timezone=_timezone(detail.get("timezone")),
        country_code=_country(detail.get("country")),
        locale=_locale(detail.get("locale")),
        features=_features(detail.get("features")),
        version=_required(_instant(detail, "updatedAt"), "updatedAt"),
    )


def parse_organization_deletion(detail: Mapping[str, Any]) -> OrganizationDeletion:
    """{organizationId, deletedAt? | updatedAt?}: one of the two times is required."""
    _require_object(detail)
    return OrganizationDeletion(organization_id=_uuid(detail, "organizationId"), deleted_at=_deletion_time(detail))


def parse_user(detail: Mapping[str, Any]) -> UserState:
    """{userId, authSubject?, email?, firstName?, lastName?, updatedAt}."""
    _require_object(detail)
    return UserState(
        user_id=_uuid(detail, "userId"),
        auth_subject=_auth_subject(detail.get("authSubject")),
        email=_email(detail.get("email")),
        first_name=_text(detail, "firstName", MAX_PERSON_NAME),
        last_name=_text(detail, "lastName", MAX_PERSON_NAME),
        version=_required(_instant(detail, "updatedAt"), "updatedAt"),
    )


def parse_membership(detail: Mapping[str, Any]) -> MembershipState:
    """{membershipId, organizationId, userId, role, status, updatedAt}."""
    _require_object(detail)
    return MembershipState(
        membership_id=_uuid(detail, "membershipId"),
        organization_id=_uuid(detail, "organizationId"),
        user_id=_uuid(detail, "userId"),
        role=_enum(Role, detail.get("role"), "role"),
        status=_enum(MembershipStatus, detail.get("status"), "status"),
        version=_required(_instant(detail, "updatedAt"), "updatedAt"),
    )


def parse_membership_deletion(detail: Mapping[str, Any]) -> MembershipDeletion:
    """{membershipId, organizationId, userId?, deletedAt? | updatedAt?}."""
    _require_object(detail)
    return MembershipDeletion(
        membership_id=_uuid(detail, "membershipId"),
        organization_id=_uuid(detail, "organizationId"),
        user_id=_uuid(detail, "userId") if detail.get("userId") is not None else None,
        deleted_at=_deletion_time(detail),
    )


def parse_membership_status_change(detail: Mapping[str, Any]) -> MembershipStatusChange:
    """{organizationId, membershipId, status, changedAt?, deletedAt?}."""
    _require_object(detail)
    changed_at = _instant(detail, "changedAt")
    return MembershipStatusChange(
        organization_id=_uuid(detail, "organizationId"),
        membership_id=_uuid(detail, "membershipId"),
        status=_enum(MembershipStatus, detail.get("status"), "status"),
        changed_at=changed_at,
        changed_at_text=str(detail["changedAt"]) if changed_at is not None else None,
        deleted_at=_instant(detail, "deletedAt"),
    )


def parse_instant(value: object) -> datetime:
    """An ISO 8601 instant with an offset (`Z` or `±hh:mm`), years 1900–2999, as UTC."""
    if not isinstance(value, str) or not value or len(value) > MAX_INSTANT:
        raise MalformedDetail("not an ISO 8601 instant")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise MalformedDetail("not an ISO 8601 instant") from None
    if parsed.utcoffset() is None:
        raise MalformedDetail("an instant without an offset")
    if not YEARS[0] <= parsed.year <= YEARS[1]:
        raise MalformedDetail("an instant outside 1900–2999")
    return parsed.astimezone(UTC)


@cache
def iana_timezones() -> frozenset[str]:
    """The zones of the IANA database (not the installation's own files: Factory, localtime, posixrules)."""
    from zoneinfo import available_timezones

    return frozenset(available_timezones()) - {"Factory", "localtime", "posixrules"}


@cache
def readable_countries() -> frozenset[str]:
    """The countries whose national phone numbers can be read (the country's use: leads.rules.identity)."""
    import phonenumbers  # lazily: most callers of directory never parse a country

    return frozenset(phonenumbers.SUPPORTED_REGIONS)


def _require_object(detail: object) -> None:
    if not isinstance(detail, Mapping):
        raise MalformedDetail("the detail is not an object")


def _required(value: Any, name: str) -> Any:
    if value is None:
        raise MalformedDetail(f"{name} is required")
    return value


def _uuid(detail: Mapping[str, Any], name: str) -> uuid.UUID:
    value = detail.get(name)
    if not isinstance(value, str) or len(value) != 36:
        raise MalformedDetail(f"{name} is not a UUID")
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        raise MalformedDetail(f"{name} is not a UUID") from None
    if str(parsed) != value.lower():
        raise MalformedDetail(f"{name} is not a UUID")
    return parsed


def _instant(detail: Mapping[str, Any], name: str) -> datetime | None:
    value = detail.get(name)
    if value is None:
        return None
    try:
        return parse_instant(value)
    except MalformedDetail as error:
        raise MalformedDetail(f"{name}: {error.reason}") from None


def _deletion_time(detail: Mapping[str, Any]) -> datetime:
    deleted_at = _instant(detail, "deletedAt") or _instant(detail, "updatedAt")
    if deleted_at is None:
        raise MalformedDetail("deletedAt or updatedAt is required")
    return deleted_at


def _text(detail: Mapping[str, Any], name: str, max_length: int) -> str | None:
    """Text made storable (no NUL, whitespace collapsed); None when absent or blank."""
    value = detail.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedDetail(f"{name} is not a string")
    cleaned = " ".join(value.replace("\x00", "").split())
    if len(cleaned) > max_length:
        raise MalformedDetail(f"{name} is longer than {max_length} characters")
    return cleaned or None


def _auth_subject(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedDetail("authSubject is not a string")
    subject = value.strip()
    if len(subject) > MAX_AUTH_SUBJECT or not subject.isprintable() or any(c.isspace() for c in subject):
        raise MalformedDetail(f"authSubject is not 1 to {MAX_AUTH_SUBJECT} printable characters")
    return subject or None


def _email(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedDetail("email is not a string")
    email = value.strip()
    if not email:
        return None
    if len(email) > MAX_EMAIL or not email.isprintable() or not EMAIL.fullmatch(email):
        raise MalformedDetail("email is not an email address")
    return email


def _timezone(value: object) -> str:
    if not isinstance(value, str) or value not in iana_timezones():
        raise MalformedDetail("timezone is not an IANA time zone")
    return value


def _country(value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) != 2 or value.upper() not in readable_countries():
        raise MalformedDetail("country is not an ISO 3166-1 alpha-2 code")
    return value.upper()


def _locale(value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_LOCALE or not LOCALE.fullmatch(value):
        raise MalformedDetail("locale is not a BCP 47 language tag")
    return value


def _features(value: object) -> frozenset[str]:
    """A list of feature names (or an object of flags, as organizations.features stores them)."""
    if isinstance(value, Mapping):
        names: list[object] = [name for name, on in value.items() if on is True]
    elif isinstance(value, list):
        names = list(value)
    else:
        raise MalformedDetail("features is not a list")
    if len(names) > MAX_FEATURES:
        raise MalformedDetail(f"more than {MAX_FEATURES} features")
    features: set[str] = set()
    for name in names:
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_FEATURE_NAME or not name.isprintable():
            raise MalformedDetail("a feature is not a name")
        features.add(name.strip())
    return frozenset(features)


def _enum(kind: type[Role] | type[MembershipStatus], value: object, name: str) -> Any:
    try:
        return kind(value)
    except (ValueError, TypeError):
        raise MalformedDetail(f"{name} is not one of {', '.join(m.value for m in kind)}") from None
