"""Shared organization settings: per field, the newer change wins, whoever made it (platform or route)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leadcrm.directory.rules import settings_to_apply

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_field_never_changed_takes_the_change() -> None:
    assert settings_to_apply({"name": "Studio"}, T0, {}) == {"name": "Studio"}


def test_an_older_change_does_not_overwrite_a_newer_one() -> None:
    last = {"timezone": (T0 + timedelta(seconds=1)).isoformat()}
    assert settings_to_apply({"timezone": "Asia/Jerusalem"}, T0, last) == {}


def test_an_equal_time_is_a_redelivery_and_changes_nothing() -> None:
    assert settings_to_apply({"locale": "he"}, T0, {"locale": T0.isoformat()}) == {}


def test_each_field_is_judged_on_its_own_time() -> None:
    last = {"name": (T0 + timedelta(hours=1)).isoformat(), "locale": (T0 - timedelta(hours=1)).isoformat()}
    assert settings_to_apply({"name": "Old", "locale": "he"}, T0, last) == {"locale": "he"}


def test_features_are_not_a_shared_setting() -> None:
    with pytest.raises(ValueError):
        settings_to_apply({"features": ["lead_management"]}, T0, {})
