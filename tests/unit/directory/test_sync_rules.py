"""The platform's directory events: parsed and bounded (a malformed detail says why), and ordered by version
(a replay or an older version changes nothing; a deletion is a tombstone; any order ends in one state)."""

from __future__ import annotations

import string
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.directory.rules import MembershipStatus, Role
from leadcrm.directory.rules.sync import (
    MalformedDetail,
    MembershipRecord,
    MembershipState,
    UserState,
    earliest,
    is_active_staff,
    is_newer,
    merge_membership,
    parse_instant,
    parse_membership,
    parse_membership_deletion,
    parse_membership_status_change,
    parse_organization,
    parse_organization_deletion,
    parse_user,
)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ORG = str(uuid.UUID(int=1))
USER = str(uuid.UUID(int=2))
MEMBERSHIP = str(uuid.UUID(int=3))

instants = st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2999, 12, 30), timezones=st.just(UTC)).map(
    lambda moment: moment.replace(microsecond=0)
)


def organization(**changes: Any) -> dict[str, Any]:
    detail = {
        "organizationId": ORG,
        "name": "Studio Aviv",
        "timezone": "Asia/Jerusalem",
        "country": "il",
        "locale": "he-IL",
        "features": ["lead_management"],
        "updatedAt": "2026-12-01T09:00:00Z",
    }
    return {**detail, **changes}


def membership(**changes: Any) -> dict[str, Any]:
    detail = {
        "membershipId": MEMBERSHIP,
        "organizationId": ORG,
        "userId": USER,
        "role": "coach",
        "status": "active",
        "updatedAt": "2026-12-01T09:00:00+02:00",
    }
    return {**detail, **changes}


# -- versions -----------------------------------------------------------------------------------------------


def test_a_first_version_is_always_newer() -> None:
    assert is_newer(T0, None)


def test_the_same_version_is_not_newer_so_a_replay_changes_nothing() -> None:
    assert not is_newer(T0, T0)


@given(instants, instants)
def test_of_two_different_versions_exactly_one_is_newer(first: datetime, second: datetime) -> None:
    if first != second:
        assert is_newer(first, second) != is_newer(second, first)
    else:
        assert not is_newer(first, second)


@given(st.none() | instants, st.none() | instants)
def test_the_earliest_deletion_is_kept_whatever_the_order(first: datetime | None, second: datetime | None) -> None:
    assert earliest(first, second) == earliest(second, first)
    kept = earliest(first, second)
    assert kept is None or kept == min(t for t in (first, second) if t is not None)


def _state(version: datetime, role: Role = Role.COACH, status: MembershipStatus = MembershipStatus.ACTIVE) -> Any:
    return MembershipState(uuid.UUID(MEMBERSHIP), uuid.UUID(ORG), uuid.UUID(USER), role, status, version)


membership_events = st.lists(
    st.tuples(
        st.integers(0, 50),
        st.sampled_from(["state", "deletion"]),
        st.sampled_from(list(Role)),
        st.sampled_from(list(MembershipStatus)),
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda event: event[0],  # one version per instant, as the platform gives them
)


def _fold(events: list[tuple[int, str, Role, MembershipStatus]]) -> MembershipRecord | None:
    record = None
    for minute, kind, role, status in events:
        version = T0 + timedelta(minutes=minute)
        if kind == "state":
            record = merge_membership(record, state=_state(version, role, status))
        else:
            record = merge_membership(record, deleted_at=version)
    return record


@settings(max_examples=50)
@given(membership_events, st.randoms(use_true_random=False))
def test_any_order_of_one_membership_events_with_replays_ends_in_one_record(events: list, random: Any) -> None:
    shuffled = list(events) + random.sample(events, k=min(2, len(events)))  # replays too
    random.shuffle(shuffled)
    assert _fold(shuffled) == _fold(sorted(events))


def test_an_older_version_does_not_overwrite_a_newer_one() -> None:
    newer = _state(T0 + timedelta(minutes=5), Role.MEMBER)
    record = merge_membership(merge_membership(None, newer), _state(T0, Role.OWNER))
    assert record.state == newer


def test_a_deletion_is_a_tombstone_no_version_clears() -> None:
    record = merge_membership(merge_membership(None, deleted_at=T0), _state(T0 + timedelta(days=1)))
    assert record.deleted_at == T0
    assert record.state is not None


def test_only_an_active_undeleted_owner_admin_or_coach_is_active_staff() -> None:
    assert is_active_staff("coach", "active", None)
    assert not is_active_staff("member", "active", None)
    assert not is_active_staff("admin", "suspended", None)
    assert not is_active_staff("owner", "active", T0)


# -- parsing ------------------------------------------------------------------------------------------------


def test_an_organization_parses_with_its_country_upper_cased_and_its_features() -> None:
    state = parse_organization(organization())
    assert (state.name, state.timezone, state.country_code, state.locale) == (
        "Studio Aviv",
        "Asia/Jerusalem",
        "IL",
        "he-IL",
    )
    assert state.features == frozenset({"lead_management"})
    assert state.version == datetime(2026, 12, 1, 9, tzinfo=UTC)


def test_a_missing_country_or_locale_is_not_part_of_the_settings_it_changes() -> None:
    state = parse_organization(organization(country=None, locale=None))
    assert state.settings() == {"name": "Studio Aviv", "timezone": "Asia/Jerusalem"}


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"organizationId": "not-a-uuid"}, "organizationId is not a UUID"),
        ({"organizationId": "{" + ORG + "}"}, "organizationId is not a UUID"),
        ({"name": "   "}, "name is required"),
        ({"name": "x" * 201}, "name is longer than 200 characters"),
        ({"timezone": "Mars/Olympus"}, "timezone is not an IANA time zone"),
        ({"timezone": "../etc/passwd"}, "timezone is not an IANA time zone"),
        ({"country": "ISR"}, "country is not an ISO 3166-1 alpha-2 code"),
        ({"country": "ZZ"}, "country is not an ISO 3166-1 alpha-2 code"),
        ({"locale": "english please"}, "locale is not a BCP 47 language tag"),
        ({"features": "lead_management"}, "features is not a list"),
        ({"features": [1]}, "a feature is not a name"),
        ({"features": ["f"] * 101}, "more than 100 features"),
        ({"updatedAt": "2026-12-01T09:00:00"}, "updatedAt: an instant without an offset"),
        ({"updatedAt": "yesterday"}, "updatedAt: not an ISO 8601 instant"),
        ({"updatedAt": None}, "updatedAt is required"),
    ],
)
def test_a_malformed_organization_says_why(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedDetail) as raised:
        parse_organization(organization(**changes))
    assert raised.value.reason == reason


def test_a_deletion_needs_a_time() -> None:
    assert parse_organization_deletion({"organizationId": ORG, "deletedAt": "2026-12-02T00:00:00Z"}).deleted_at == (
        datetime(2026, 12, 2, tzinfo=UTC)
    )
    assert parse_organization_deletion({"organizationId": ORG, "updatedAt": "2026-12-02T00:00:00Z"})
    with pytest.raises(MalformedDetail, match="deletedAt or updatedAt is required"):
        parse_organization_deletion({"organizationId": ORG})


def test_an_instant_is_read_in_utc_and_bounded_to_1900_2999() -> None:
    assert parse_instant("2026-12-01T11:00:00+02:00") == datetime(2026, 12, 1, 9, tzinfo=UTC)
    with pytest.raises(MalformedDetail):
        parse_instant("3026-12-01T11:00:00+02:00")
    with pytest.raises(MalformedDetail):
        parse_instant("2026-12-01T11:00:00+02:00" + " " * 64)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"role": "superuser"}, "role is not one of owner, admin, coach, member"),
        ({"role": ["owner"]}, "role is not one of owner, admin, coach, member"),
        ({"status": "gone"}, "status is not one of active, pending_invitation, cancelled, suspended"),
        ({"userId": None}, "userId is not a UUID"),
        ({"updatedAt": 1733043600}, "updatedAt: not an ISO 8601 instant"),
    ],
)
def test_a_malformed_membership_says_why(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedDetail) as raised:
        parse_membership(membership(**changes))
    assert raised.value.reason == reason


def test_a_membership_deletion_and_a_status_change_parse() -> None:
    deletion = parse_membership_deletion(
        {"membershipId": MEMBERSHIP, "organizationId": ORG, "deletedAt": "2026-12-01T10:00:00Z"}
    )
    assert (deletion.user_id, deletion.deleted_at) == (None, datetime(2026, 12, 1, 10, tzinfo=UTC))
    change = parse_membership_status_change(
        {"membershipId": MEMBERSHIP, "organizationId": ORG, "status": "cancelled", "changedAt": "2026-11-29T09:00:00Z"}
    )
    assert (change.status, change.changed_at_text) == (MembershipStatus.CANCELLED, "2026-11-29T09:00:00Z")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"email": "not an email"}, "email is not an email address"),
        ({"email": "a@" + "b" * 320}, "email is not an email address"),
        ({"authSubject": "has space"}, "authSubject is not 1 to 255 printable characters"),
        ({"authSubject": "s" * 256}, "authSubject is not 1 to 255 printable characters"),
        ({"firstName": 7}, "firstName is not a string"),
    ],
)
def test_a_malformed_user_says_why(changes: dict[str, Any], reason: str) -> None:
    detail = {"userId": USER, "authSubject": "user_2abc", "email": "dana@example.com", "updatedAt": "2026-12-01T09:00Z"}
    with pytest.raises(MalformedDetail) as raised:
        parse_user({**detail, **changes})
    assert raised.value.reason == reason


def test_a_users_names_are_made_storable() -> None:
    detail = {"userId": USER, "firstName": " Da\x00na  ", "lastName": "", "updatedAt": "2026-12-01T09:00:00Z"}
    state = parse_user(detail)
    assert (state.first_name, state.last_name, state.email, state.auth_subject) == ("Dana", None, None, None)


# Subjects as issuers make them: Clerk's "user_2abc", Auth0's "auth0|123", Cognito's UUIDs.
subjects = st.text(string.ascii_letters + string.digits + "_-|:.@", min_size=1, max_size=255)


@settings(max_examples=50)
@given(
    st.uuids(),
    st.none() | subjects,
    st.none() | st.emails().filter(lambda e: len(e) <= 320),
    instants,
)
def test_a_user_state_reads_back_from_its_detail(user_id: uuid.UUID, subject: Any, email: Any, version: Any) -> None:
    state = UserState(user_id, subject, email, "Dana", "Cohen", version)
    assert parse_user(state.to_detail()) == state


@settings(max_examples=50)
@given(st.uuids(), st.sampled_from(list(Role)), st.sampled_from(list(MembershipStatus)), instants)
def test_a_membership_state_reads_back_from_its_detail(
    membership_id: uuid.UUID, role: Role, status: MembershipStatus, version: datetime
) -> None:
    state = MembershipState(membership_id, uuid.UUID(ORG), uuid.UUID(USER), role, status, version)
    assert parse_membership(state.to_detail()) == state


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=8,
)
details = st.fixed_dictionaries(
    {},
    optional={
        name: json_values | st.just(value)
        for name, value in {**organization(), **membership(), "email": "a@b.c", "authSubject": "s"}.items()
    },
)


@settings(max_examples=100)
@given(details | json_values)
def test_any_detail_parses_or_is_malformed_never_anything_else(detail: Any) -> None:
    for parse in (
        parse_organization,
        parse_organization_deletion,
        parse_user,
        parse_membership,
        parse_membership_deletion,
        parse_membership_status_change,
    ):
        try:
            parse(detail)
        except MalformedDetail as error:
            assert error.reason
