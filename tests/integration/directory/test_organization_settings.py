"""GET/PATCH /organizations/{orgId}/settings on PostgreSQL: partial changes, validation, who owns which field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from leadcrm.directory.tables import organizations
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.factories import make_caller, make_membership, make_user


def _path(caller) -> str:
    return f"/organizations/{caller.org_id}/settings"


def _patch(caller, body):
    return call_api("PATCH", _path(caller), sub=caller.sub, body=body)


def _row(org_id):
    with get_engine().connect() as conn:
        return conn.execute(select(organizations).where(organizations.c.id == org_id)).mappings().one()


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_staff_read_the_settings_with_the_features_as_names(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    response = call_api("GET", _path(owner), sub=coach.sub)
    assert response.status == 200, response.body
    data = response.data
    assert data["organizationId"] == str(owner.org_id)
    assert (data["name"], data["timezone"], data["country"], data["locale"]) == (
        owner.organization.name,
        "UTC",
        None,
        "en",
    )
    assert data["features"] == ["lead_management"]
    assert data["defaultAssigneeUserId"] is None
    assert data["phoneRegion"] is None


def test_a_patch_changes_only_the_fields_sent(owner):
    response = _patch(owner, {"timezone": "Asia/Jerusalem"})
    assert response.status == 200, response.body
    row = _row(owner.org_id)
    assert (row["name"], row["timezone"], row["locale"], row["country_code"]) == (
        owner.organization.name,
        "Asia/Jerusalem",
        "en",
        None,
    )


def test_a_patch_answers_the_settings_as_they_now_are(owner):
    response = _patch(owner, {"name": "  Studio Haifa  ", "country": "il", "locale": "he-IL"})
    assert response.status == 200, response.body
    assert (response.data["name"], response.data["country"], response.data["locale"]) == ("Studio Haifa", "IL", "he-IL")
    assert response.data == call_api("GET", _path(owner), sub=owner.sub).data


def test_a_patch_stamps_each_shared_field_it_sets_and_bumps_updated_at(owner):
    before = _row(owner.org_id)
    _patch(owner, {"name": "Renamed", "locale": "he"})
    after = _row(owner.org_id)
    assert set(after["settings_changed_at"]) == {"name", "locale"}
    stamped = datetime.fromisoformat(after["settings_changed_at"]["name"])
    assert stamped > before["updated_at"]
    assert after["updated_at"] > before["updated_at"]


def test_a_field_the_platform_changed_at_a_later_instant_keeps_the_platforms_value(owner):
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    with get_engine().begin() as conn:
        conn.execute(
            update(organizations)
            .where(organizations.c.id == owner.org_id)
            .values(name="Platform Name", settings_changed_at={"name": later})
        )
    response = _patch(owner, {"name": "Route Name", "locale": "he"})
    assert response.status == 200, response.body
    assert (response.data["name"], response.data["locale"]) == ("Platform Name", "he")
    assert _row(owner.org_id)["settings_changed_at"]["name"] == later


def test_the_country_reads_national_phones_and_without_it_the_timezones_country_does(owner):
    assert _patch(owner, {"timezone": "Asia/Jerusalem"}).data["phoneRegion"] == "IL"
    assert _patch(owner, {"country": "GB"}).data["phoneRegion"] == "GB"
    assert _patch(owner, {"country": None}).data["phoneRegion"] == "IL"
    assert _patch(owner, {"timezone": "UTC"}).data["phoneRegion"] is None


def test_the_default_assignee_is_set_through_the_same_setting_as_its_own_route(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    response = _patch(owner, {"defaultAssigneeUserId": str(coach.user.id)})
    assert response.data["defaultAssigneeUserId"] == str(coach.user.id)
    own_route = call_api("GET", f"/organizations/{owner.org_id}/default-assignee", sub=owner.sub)
    assert own_route.data["userId"] == str(coach.user.id)
    assert _patch(owner, {"defaultAssigneeUserId": None}).data["defaultAssigneeUserId"] is None


def test_a_default_assignee_who_is_not_active_staff_is_refused_and_nothing_changes(owner):
    member = make_user()
    make_membership(owner.organization, member, role="member")
    response = _patch(owner, {"name": "Not applied", "defaultAssigneeUserId": str(member.id)})
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")
    assert _row(owner.org_id)["name"] == owner.organization.name


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": None},
        {"timezone": "Mars/Olympus_Mons"},
        {"timezone": "../../etc/passwd"},
        {"timezone": "posixrules"},
        {"timezone": None},
        {"country": "XX"},
        {"country": "ISR"},
        {"country": "I1"},
        {"locale": "english please"},
        {"locale": "e"},
        {"locale": None},
        {"features": ["lead_management"]},
        {"defaultAssigneeUserId": "not-a-uuid"},
    ],
    ids=repr,
)
def test_bad_settings_are_refused_with_400_and_nothing_changes(owner, body):
    before = _row(owner.org_id)
    response = _patch(owner, body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED"), response.body
    assert _row(owner.org_id) == before


@pytest.mark.parametrize("role", ["coach", "member"])
def test_only_owners_and_admins_change_settings(owner, role):
    other = make_caller(role=role, organization=owner.organization)
    response = _patch(other, {"name": "Nope"})
    assert response.status == 403
    assert _row(owner.org_id)["name"] == owner.organization.name


def test_another_organizations_settings_are_refused(owner):
    stranger = make_caller(role="owner")
    response = call_api("PATCH", _path(owner), sub=stranger.sub, body={"name": "Hijacked"})
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")
    assert call_api("GET", _path(owner), sub=stranger.sub).status == 403
    assert _row(owner.org_id)["name"] == owner.organization.name
