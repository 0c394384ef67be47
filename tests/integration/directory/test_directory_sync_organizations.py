"""organization.created / .updated / .deleted from the platform: versioned by updatedAt (a replay or an older
version changes nothing), shared settings per field with the settings route, features the platform's alone,
a deletion a tombstone that admits nobody and that nothing revives."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from sqlalchemy import update

from leadcrm.directory.tables import organizations
from leadcrm.platform.db.engine import get_engine
from tests.support.directory_sync_helpers import (
    T0,
    access,
    at,
    consume,
    deliver,
    held_of,
    membership_detail,
    new_ids,
    organization_detail,
    organization_row,
    subject,
    user_detail,
)
from tests.support.factories import make_organization
from tests.support.rejections import rejected_metrics, rejection_details, rejections

CREATED, UPDATED, DELETED = "organization.created", "organization.updated", "organization.deleted"


def test_organization_created_makes_the_organization_with_its_settings_and_features():
    org_id, _, _ = new_ids()
    assert deliver(CREATED, organization_detail(org_id, country="il", features=["lead_management", "deals"]))
    row = organization_row(org_id)
    assert (row["name"], row["timezone"], row["country_code"], row["locale"]) == (
        "Studio Aviv",
        "Asia/Jerusalem",
        "IL",
        "he",
    )
    assert row["features"] == {"deals": True, "lead_management": True}
    assert row["platform_updated_at"] == T0
    assert row["settings_changed_at"] == {
        field: T0.isoformat() for field in ("name", "timezone", "country_code", "locale")
    }


def test_a_replayed_event_changes_nothing():
    org_id, _, _ = new_ids()
    deliver(CREATED, organization_detail(org_id))
    first = organization_row(org_id)
    assert deliver(CREATED, organization_detail(org_id)) is False
    assert deliver(UPDATED, organization_detail(org_id)) is False  # the same version under the other name
    assert organization_row(org_id) == first


def test_a_newer_update_applies_and_an_older_one_never_overwrites_it():
    org_id, _, _ = new_ids()
    deliver(CREATED, organization_detail(org_id, 0))
    assert deliver(UPDATED, organization_detail(org_id, 10, name="Studio Yam", features=[]))
    assert deliver(UPDATED, organization_detail(org_id, 5, name="Studio Old")) is False
    row = organization_row(org_id)
    assert (row["name"], row["features"], row["platform_updated_at"]) == ("Studio Yam", {}, T0 + timedelta(minutes=10))


def test_a_created_arriving_after_an_updated_does_not_regress_it():
    org_id, _, _ = new_ids()
    assert deliver(UPDATED, organization_detail(org_id, 10, name="Studio Yam"))
    assert deliver(CREATED, organization_detail(org_id, 0, name="Studio Aviv")) is False
    assert organization_row(org_id)["name"] == "Studio Yam"


def test_a_setting_changed_later_through_the_settings_route_is_not_overwritten_per_field():
    org_id, _, _ = new_ids()
    deliver(CREATED, organization_detail(org_id, 0))
    later = (T0 + timedelta(minutes=30)).isoformat()
    with get_engine().begin() as conn:  # as the settings route writes: the value and its field's time
        conn.execute(
            update(organizations)
            .where(organizations.c.id == org_id)
            .values(
                name="Named by LeadCRM",
                settings_changed_at=organizations.c.settings_changed_at.op("||")({"name": later}),
            )
        )
    deliver(UPDATED, organization_detail(org_id, 10, name="Named by the platform", timezone="Europe/London"))
    row = organization_row(org_id)
    assert (row["name"], row["timezone"]) == ("Named by LeadCRM", "Europe/London")
    assert row["settings_changed_at"]["name"] == later
    assert row["settings_changed_at"]["timezone"] == (T0 + timedelta(minutes=10)).isoformat()


def test_a_country_or_locale_the_platform_does_not_send_is_kept():
    org_id, _, _ = new_ids()
    deliver(CREATED, organization_detail(org_id, 0, country="IL", locale="he"))
    deliver(UPDATED, organization_detail(org_id, 1, country=None, locale=None))
    row = organization_row(org_id)
    assert (row["country_code"], row["locale"]) == ("IL", "he")


def test_an_organization_made_here_takes_the_platforms_first_version():
    organization = make_organization()  # as the local stack or lead conversion makes them: no platform version
    deliver(UPDATED, organization_detail(organization.id, 0, name="From the platform"))
    assert organization_row(organization.id)["name"] == "From the platform"


def _owner_of(org_id) -> str:
    _, user_id, membership_id = new_ids()
    sub = subject()
    deliver("user.created", user_detail(user_id, subject=sub))
    deliver("membership.created", membership_detail(membership_id, org_id, user_id, role="owner"))
    return sub


def test_a_deleted_organization_admits_nobody_and_no_older_event_revives_it():
    org_id, _, _ = new_ids()
    deliver(CREATED, organization_detail(org_id, 0))
    owner = _owner_of(org_id)
    assert access(owner, org_id).role == "owner"

    assert deliver(DELETED, {"organizationId": str(org_id), "deletedAt": (T0 + timedelta(minutes=20)).isoformat()})
    assert access(owner, org_id) == "NOT_A_MEMBER"
    deliver(UPDATED, organization_detail(org_id, 10, name="Revived?"))  # older than the deletion
    deliver(UPDATED, organization_detail(org_id, 30, name="Renamed after"))  # newer: fields, never a revival
    assert organization_row(org_id)["deleted_at"] == T0 + timedelta(minutes=20)
    assert access(owner, org_id) == "NOT_A_MEMBER"


def test_a_replayed_deletion_changes_nothing_and_the_earliest_deletion_is_kept():
    org_id, _, _ = new_ids()
    deliver(CREATED, organization_detail(org_id, 0))
    assert deliver(DELETED, {"organizationId": str(org_id), "updatedAt": (T0 + timedelta(minutes=20)).isoformat()})
    assert (
        deliver(DELETED, {"organizationId": str(org_id), "updatedAt": (T0 + timedelta(minutes=20)).isoformat()})
        is False
    )
    assert deliver(DELETED, {"organizationId": str(org_id), "deletedAt": (T0 + timedelta(minutes=15)).isoformat()})
    assert organization_row(org_id)["deleted_at"] == T0 + timedelta(minutes=15)


def test_a_deletion_before_the_creation_is_held_and_applied_with_it():
    org_id, _, _ = new_ids()
    assert deliver(DELETED, {"organizationId": str(org_id), "deletedAt": (T0 + timedelta(minutes=5)).isoformat()})
    assert organization_row(org_id) is None
    assert [h["waiting_for"] for h in held_of(org_id)] == ["creation"]

    deliver(CREATED, organization_detail(org_id, 0))
    assert organization_row(org_id)["deleted_at"] == T0 + timedelta(minutes=5)
    assert held_of(org_id) == []


@pytest.mark.parametrize(
    ("detail_type", "changes", "reason"),
    [
        (CREATED, {"timezone": "Mars/Olympus"}, "timezone is not an IANA time zone"),
        (UPDATED, {"country": "XX"}, "country is not an ISO 3166-1 alpha-2 code"),
        (UPDATED, {"updatedAt": "2026-12-01 09:00"}, "updatedAt: an instant without an offset"),
        (CREATED, {"organizationId": "42"}, "organizationId is not a UUID"),
        (DELETED, {"deletedAt": None, "updatedAt": None}, "deletedAt or updatedAt is required"),
    ],
)
def test_a_malformed_detail_is_rejected_with_its_reason_and_nothing_is_written(
    detail_type, changes, reason, caplog, capsys
):
    org_id, _, _ = new_ids()
    caplog.set_level(logging.INFO)
    message_id, answer = consume(detail_type, {**organization_detail(org_id), **changes})
    assert answer == {"batchItemFailures": []}  # acknowledged: a retry could never make it valid
    assert organization_row(org_id) is None and held_of(org_id) == []
    assert rejections(caplog) == [("task_lifecycle", message_id, "malformed")]
    assert rejection_details(caplog) == [f"{detail_type}: {reason}"]
    assert rejected_metrics(capsys.readouterr().out) == [("task_lifecycle", "malformed")]


def test_a_held_deletion_is_no_rejection(caplog, capsys):
    org_id, _, _ = new_ids()
    caplog.set_level(logging.INFO)
    _, answer = consume(DELETED, {"organizationId": str(org_id), "deletedAt": at(5)})
    assert answer == {"batchItemFailures": []}
    assert [h["waiting_for"] for h in held_of(org_id)] == ["creation"]
    assert rejections(caplog) == [] and rejected_metrics(capsys.readouterr().out) == []
