"""Pure rules of the morning digest and of which status changes close a lead's tasks."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from leadcrm.work.rules.attention import UrgentCounts
from leadcrm.work.rules.digest import compose_digest, counts_payload, in_morning_window, local_now, worth_sending
from leadcrm.work.rules.task_closing import closes_tasks


@pytest.mark.parametrize(
    ("utc", "zone", "expected"),
    [
        (datetime(2026, 3, 10, 22, 0, tzinfo=UTC), "Asia/Tokyo", True),  # 07:00 sharp
        (datetime(2026, 3, 10, 21, 59, tzinfo=UTC), "Asia/Tokyo", False),  # 06:59
        (datetime(2026, 3, 11, 0, 59, tzinfo=UTC), "Asia/Tokyo", True),  # 09:59
        (datetime(2026, 3, 11, 1, 0, tzinfo=UTC), "Asia/Tokyo", False),  # 10:00: over
        (datetime(2026, 7, 1, 6, 0, tzinfo=UTC), "Europe/London", True),  # 07:00 BST
        (datetime(2026, 1, 1, 6, 0, tzinfo=UTC), "Europe/London", False),  # 06:00 GMT
        (datetime(2026, 3, 29, 6, 30, tzinfo=UTC), "Europe/Berlin", True),  # 08:30 on the day clocks go forward
    ],
)
def test_the_morning_window_is_read_on_the_organizations_wall_clock(utc, zone, expected):
    assert in_morning_window(local_now(utc, zone)) is expected


def test_the_local_date_is_the_organizations_not_utcs():
    assert local_now(datetime(2026, 3, 10, 22, 30, tzinfo=UTC), "Asia/Tokyo").date() == date(2026, 3, 11)
    assert local_now(datetime(2026, 3, 11, 12, 30, tzinfo=UTC), "America/Los_Angeles").date() == date(2026, 3, 11)


@pytest.mark.parametrize("zone", [None, "", "Mars/Olympus", "../etc/passwd"])
def test_an_unknown_timezone_reads_as_utc(zone):
    assert local_now(datetime(2026, 3, 10, 7, 30, tzinfo=UTC), zone).hour == 7


def test_a_naive_now_is_refused():
    with pytest.raises(ValueError):
        local_now(datetime(2026, 3, 10, 7, 30), "UTC")


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        (UrgentCounts(0, 0), False),
        (UrgentCounts(0, 0, 0), False),
        (UrgentCounts(1, 0), True),
        (UrgentCounts(0, 1), True),
        (UrgentCounts(0, 0, 2), True),
    ],
)
def test_a_digest_is_sent_only_when_something_is_urgent(counts, expected):
    assert worth_sending(counts) is expected


def test_a_coachs_payload_has_no_lead_count_and_a_managers_has_one():
    assert counts_payload(UrgentCounts(1, 2), includes_leads=False) == {"overdueTasks": 1, "dueTodayTasks": 2}
    assert counts_payload(UrgentCounts(1, 2, 0), includes_leads=True) == {
        "overdueTasks": 1,
        "dueTodayTasks": 2,
        "leadsNeedingAttention": 0,
    }


def test_the_subject_says_only_what_is_not_zero():
    mail = compose_digest(UrgentCounts(0, 1, 3), "Studio", date(2026, 3, 11), includes_leads=True)
    assert mail.subject == "Studio: 1 task due today, 3 leads need attention"
    assert "Leads needing attention: 3" in mail.text and "2026-03-11" in mail.text


def test_a_coachs_mail_does_not_mention_leads():
    mail = compose_digest(UrgentCounts(2, 0), "Studio", date(2026, 3, 11), includes_leads=False)
    assert mail.subject == "Studio: 2 overdue tasks"
    assert "Leads" not in mail.text


def test_an_organization_name_cannot_break_the_subject_header():
    mail = compose_digest(UrgentCounts(1, 0), "Evil\r\nBcc: x@example.com", date(2026, 3, 11), includes_leads=False)
    assert "\n" not in mail.subject and "\r" not in mail.subject


@pytest.mark.parametrize("status", ["lost", "converted", "customer"])
def test_lost_converted_and_customer_close_the_leads_tasks(status):
    assert closes_tasks(status)


@pytest.mark.parametrize("status", ["new", "contacted", "callback", "trial_booked", "no_show", "frozen", "", None, "x"])
def test_open_frozen_and_unknown_statuses_close_nothing(status):
    assert not closes_tasks(status)


def test_past_99_leads_the_digest_says_99_plus_as_the_dashboard_does():
    mail = compose_digest(UrgentCounts(0, 0, 100), "Studio", date(2026, 3, 11), includes_leads=True)
    assert mail.subject == "Studio: 99+ leads need attention"
    assert "Leads needing attention: 99+" in mail.text


def test_the_delivery_keeps_the_lead_count_as_shown():
    payload = counts_payload(UrgentCounts(150, 0, 151), includes_leads=True)
    assert payload["leadsNeedingAttention"] == 100
