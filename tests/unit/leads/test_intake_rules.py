"""leadcrm.leads.rules.intake: who a lead is, the dedup lock keys, the public boundary, the auto-task title,
and the fixed throttling windows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from leadcrm.leads.rules.intake import (
    PUBLIC_CAMPAIGN_REFS,
    MatchResolution,
    accepted_campaign_ref,
    contact_task_title,
    dedup_lock_keys,
    is_closed_lead,
    normalized_email,
    over_limit,
    phone_digits,
    rate_window_start,
    resolve_match,
    retry_after_seconds,
)
from leadcrm.pipelines.rules.statuses import StageCategory

ORG = uuid.UUID("01890000-0000-7000-8000-000000000001")
OTHER_ORG = uuid.UUID("01890000-0000-7000-8000-000000000002")

# --- who a lead is -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "expected"),
    [("Ada@Example.COM", "ada@example.com"), ("  ada@example.com ", "ada@example.com"), ("", None), (None, None)],
)
def test_emails_compare_case_insensitively_without_blanks(typed, expected):
    assert normalized_email(typed) == expected


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("050-123 4567", "0501234567"),
        ("(050) 123.45.67", "0501234567"),
        ("+972 50 123 4567", "972501234567"),
        ("---", None),
        ("", None),
        (None, None),
    ],
)
def test_phones_compare_by_their_digits_and_a_phone_without_digits_is_none(typed, expected):
    assert phone_digits(typed) == expected


def test_the_same_person_typed_differently_gets_the_same_lock_keys():
    assert dedup_lock_keys(ORG, "Ada@Example.com", "050-123 4567") == dedup_lock_keys(
        ORG, "ada@example.com", "0501234567"
    )


def test_lock_keys_are_per_organization():
    assert not set(dedup_lock_keys(ORG, "ada@example.com", None)) & set(
        dedup_lock_keys(OTHER_ORG, "ada@example.com", None)
    )


def test_there_is_one_lock_key_per_identifier():
    assert len(dedup_lock_keys(ORG, "ada@example.com", "0501234567")) == 2
    assert len(dedup_lock_keys(ORG, "ada@example.com", None)) == 1
    assert len(dedup_lock_keys(ORG, None, "0501234567")) == 1


def test_a_lead_with_only_a_name_takes_no_lock():
    assert dedup_lock_keys(ORG, None, None) == []
    assert dedup_lock_keys(ORG, "", "---") == []


def test_lock_keys_come_in_one_global_order_so_creates_never_wait_in_a_cycle():
    keys = dedup_lock_keys(ORG, "ada@example.com", "0501234567")
    assert keys == sorted(keys)


def test_an_email_and_a_phone_with_the_same_text_lock_different_keys():
    assert dedup_lock_keys(ORG, "0501234567@x.test", None) != dedup_lock_keys(ORG, None, "0501234567")


def test_lock_keys_fit_a_postgresql_bigint():
    for key in dedup_lock_keys(ORG, "ada@example.com", "0501234567"):
        assert -(2**63) <= key < 2**63


@pytest.mark.parametrize(
    ("status", "archived", "closed"),
    [
        (StageCategory.LOST, False, True),
        (StageCategory.FROZEN, False, True),
        (StageCategory.NEW, True, True),
        (StageCategory.TRIAL_BOOKED, True, True),
        (StageCategory.NEW, False, False),
        (StageCategory.CONTACTED, False, False),
        (StageCategory.CONVERTED, False, False),
        (StageCategory.CUSTOMER, False, False),
    ],
)
def test_closed_means_lost_frozen_or_archived_and_never_won(status, archived, closed):
    assert is_closed_lead(status.value, archived) is closed


@pytest.mark.parametrize("status", list(StageCategory))
@pytest.mark.parametrize("archived", [False, True])
def test_an_entry_point_reopens_a_closed_match_and_reports_every_other_as_a_duplicate(status, archived):
    won = status in (StageCategory.CONVERTED, StageCategory.CUSTOMER)
    expected = (
        MatchResolution.REOPEN if is_closed_lead(status.value, archived) and not won else MatchResolution.DUPLICATE
    )
    assert resolve_match(status.value, archived, entry_point=True) is expected


@pytest.mark.parametrize("status", list(StageCategory))
@pytest.mark.parametrize("archived", [False, True])
def test_a_path_that_is_not_an_entry_point_reports_every_match_as_a_duplicate(status, archived):
    assert resolve_match(status.value, archived, entry_point=False) is MatchResolution.DUPLICATE


def test_a_lost_lead_linked_to_a_membership_is_won_and_never_reopened():
    converted = uuid.UUID("01890000-0000-7000-8000-0000000000aa")
    resolution = resolve_match("lost", False, converted_membership_id=converted, entry_point=True)
    assert resolution is MatchResolution.DUPLICATE


# --- the public boundary -----------------------------------------------------------------------------------


@pytest.mark.parametrize("ref", ["lead-popup", "contact-form"])
def test_the_minisites_own_surfaces_are_kept(ref):
    assert accepted_campaign_ref(ref) == ref


@pytest.mark.parametrize("ref", [None, "", "Lead-Popup", "lead-popup ", "spring-promo", "facebook", "manual"])
def test_any_other_campaign_ref_is_dropped(ref):
    assert accepted_campaign_ref(ref) is None


def test_exactly_two_public_campaign_refs_exist_each_with_a_hook_name():
    assert set(PUBLIC_CAMPAIGN_REFS) == {"lead-popup", "contact-form"}
    assert all(name.strip() for name in PUBLIC_CAMPAIGN_REFS.values())


# --- the auto-task -----------------------------------------------------------------------------------------


def test_the_auto_task_names_the_lead_by_name_first():
    assert contact_task_title("Ada Lovelace", "ada@example.com", "050") == "Contact new lead: Ada Lovelace"


def test_without_a_name_the_auto_task_names_the_email_then_the_phone():
    assert contact_task_title(None, "ada@example.com", "050") == "Contact new lead: ada@example.com"
    assert contact_task_title("  ", None, "050-1234567") == "Contact new lead: 050-1234567"


def test_the_auto_task_title_fits_a_title():
    title = contact_task_title("A" * 1000, None, None)
    assert len(title) <= 255
    assert title.startswith("Contact new lead: AAA")


# --- throttling --------------------------------------------------------------------------------------------


def test_a_window_starts_on_the_minute():
    at = datetime(2026, 5, 1, 10, 15, 42, 123456, tzinfo=UTC)
    assert rate_window_start(at) == datetime(2026, 5, 1, 10, 15, tzinfo=UTC)


def test_windows_are_in_utc_whatever_the_clock_zone():
    at = datetime(2026, 5, 1, 12, 15, 42, tzinfo=timezone(timedelta(hours=2)))
    assert rate_window_start(at) == datetime(2026, 5, 1, 10, 15, tzinfo=UTC)


@pytest.mark.parametrize(("second", "expected"), [(0, 60), (1, 59), (42.2, 18), (59, 1), (59.9, 1)])
def test_retry_after_is_the_whole_seconds_left_in_the_window(second, expected):
    start = datetime(2026, 5, 1, 10, 15, tzinfo=UTC)
    assert retry_after_seconds(start, start + timedelta(seconds=second)) == expected


def test_retry_after_is_never_zero_or_more_than_a_window():
    start = datetime(2026, 5, 1, 10, 15, tzinfo=UTC)
    assert retry_after_seconds(start, start + timedelta(minutes=5)) == 1
    assert retry_after_seconds(start, start - timedelta(minutes=5)) == 60


@pytest.mark.parametrize(("hits", "limit", "over"), [(1, 10, False), (10, 10, False), (11, 10, True), (2, 1, True)])
def test_the_request_that_goes_past_the_limit_is_refused(hits, limit, over):
    assert over_limit(hits, limit) is over
