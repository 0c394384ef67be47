"""leadcrm.directory.rules: who is staff, who manages, which features an organization has."""

from __future__ import annotations

import pytest

from leadcrm.directory.rules import Actor, Role, enabled_features, is_staff_role
from leadcrm.platform.ids import uuid7


def _actor(role: Role, features: frozenset[str] = frozenset({"lead_management"})) -> Actor:
    return Actor(user_id=uuid7(), organization_id=uuid7(), membership_id=uuid7(), role=role, features=features)


@pytest.mark.parametrize("role", ["owner", "admin", "coach"])
def test_owner_admin_and_coach_are_staff(role):
    assert is_staff_role(role)
    assert _actor(Role(role)).is_staff


def test_a_member_is_not_staff():
    assert not is_staff_role("member")
    assert not _actor(Role.MEMBER).is_staff


def test_an_unknown_role_is_not_staff():
    assert not is_staff_role("superuser")


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
def test_owner_and_admin_are_managers(role):
    assert _actor(role).is_manager


@pytest.mark.parametrize("role", [Role.COACH, Role.MEMBER])
def test_coach_and_member_are_not_managers(role):
    assert not _actor(role).is_manager


def test_only_flags_that_are_true_count_as_enabled_features():
    features = {"lead_management": True, "analytics": False, "deals": "yes", "tickets": 1, "email": None}
    assert enabled_features(features) == frozenset({"lead_management"})


def test_features_given_as_a_list_of_names_are_all_enabled():
    assert enabled_features(["lead_management", "analytics"]) == frozenset({"lead_management", "analytics"})


@pytest.mark.parametrize("nothing", [None, {}, []])
def test_no_features_stored_means_none_enabled(nothing):
    assert enabled_features(nothing) == frozenset()


def test_an_actor_has_a_feature_only_when_it_is_enabled():
    actor = _actor(Role.COACH, features=frozenset({"lead_management"}))
    assert actor.has_feature("lead_management")
    assert not actor.has_feature("analytics")
