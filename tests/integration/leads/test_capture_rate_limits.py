"""Throttling of the public capture: fixed one-minute windows per client IP and per organization, counted
in PostgreSQL; over a limit -> 429 RATE_LIMITED with Retry-After, and nothing else written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, insert, select

from leadcrm.leads import rate_limits
from leadcrm.leads.tables import rate_limit_counters
from leadcrm.platform.db.engine import get_engine
from tests.support.capture_helpers import capture, fresh_ip, lead_count, receipts_of
from tests.support.factories import make_organization

# 10:15:42 — 18 seconds before the window ends.
NOW = datetime(2031, 3, 4, 10, 15, 42, 300000, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Captures that get through publish `lead.created`; the bus exists."""


@pytest.fixture
def clock(monkeypatch):
    """Every request of a test falls in the same window, whatever the wall clock does meanwhile."""
    current = {"at": NOW}
    monkeypatch.setattr(rate_limits, "clock", lambda: current["at"])
    return current


@pytest.fixture
def ip_limit_2(monkeypatch, clock):
    monkeypatch.setenv("CAPTURE_LIMIT_PER_IP_PER_MINUTE", "2")


@pytest.fixture
def org_limit_2(monkeypatch, clock):
    monkeypatch.setenv("CAPTURE_LIMIT_PER_ORG_PER_MINUTE", "2")


def _lead(i: int) -> dict:
    return {"email": f"visitor{i}@example.com"}


def test_a_client_over_its_per_minute_limit_gets_429_rate_limited(ip_limit_2):
    org, ip = make_organization(), fresh_ip()
    assert [capture(org.id, _lead(i), ip=ip).status for i in range(3)] == [201, 201, 429]


def test_the_429_says_when_to_retry_the_end_of_the_window(ip_limit_2):
    org, ip = make_organization(), fresh_ip()
    for i in range(2):
        capture(org.id, _lead(i), ip=ip)
    refused = capture(org.id, _lead(2), ip=ip)
    assert refused.error_code == "RATE_LIMITED"
    assert refused.headers["retry-after"] == "18"
    assert refused.body["error"]["retryAfterSeconds"] == 18
    assert refused.headers["content-type"].startswith("application/json")


def test_a_throttled_submission_writes_nothing(ip_limit_2):
    org, ip = make_organization(), fresh_ip()
    for i in range(2):
        capture(org.id, _lead(i), ip=ip)
    capture(org.id, _lead(99), ip=ip)
    capture(org.id, _lead(0), ip=ip)  # a throttled duplicate leaves no receipt either
    assert lead_count(org.id) == 2
    assert len(receipts_of(org.id)) == 2


def test_another_client_is_not_throttled_by_the_first_ones_limit(ip_limit_2):
    org, ip = make_organization(), fresh_ip()
    for i in range(3):
        capture(org.id, _lead(i), ip=ip)
    assert capture(org.id, _lead(3), ip=fresh_ip()).status == 201


def test_the_next_window_lets_the_client_in_again(ip_limit_2, clock):
    org, ip = make_organization(), fresh_ip()
    for i in range(3):
        capture(org.id, _lead(i), ip=ip)
    clock["at"] = NOW + timedelta(seconds=18)
    assert capture(org.id, _lead(3), ip=ip).status == 201


def test_an_organization_over_its_limit_is_throttled_whoever_submits(org_limit_2):
    org = make_organization()
    statuses = [capture(org.id, _lead(i), ip=fresh_ip()).status for i in range(3)]
    assert statuses == [201, 201, 429]
    assert lead_count(org.id) == 2


def test_one_organizations_limit_does_not_throttle_another(org_limit_2):
    busy, quiet = make_organization(), make_organization()
    for i in range(3):
        capture(busy.id, _lead(i), ip=fresh_ip())
    assert capture(quiet.id, _lead(0), ip=fresh_ip()).status == 201


def test_an_unknown_organization_is_throttled_like_a_real_one(org_limit_2):
    """Throttling answers the same whether the organization exists: no oracle there either."""
    real, unknown = make_organization(), "01890000-0000-7000-8000-00000000dead"
    real_statuses = [capture(real.id, _lead(i), ip=fresh_ip()).status for i in range(3)]
    unknown_statuses = [capture(unknown, _lead(i), ip=fresh_ip()).status for i in range(3)]
    assert real_statuses == unknown_statuses == [201, 201, 429]


def test_the_default_limit_is_ten_per_client_per_minute(clock, monkeypatch):
    monkeypatch.delenv("CAPTURE_LIMIT_PER_IP_PER_MINUTE", raising=False)
    org, ip = make_organization(), fresh_ip()
    statuses = [capture(org.id, _lead(i), ip=ip).status for i in range(11)]
    assert statuses == [201] * 10 + [429]


def test_counters_are_rows_per_bucket_and_window(ip_limit_2):
    org, ip = make_organization(), fresh_ip()
    for i in range(3):
        capture(org.id, _lead(i), ip=ip)
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(rate_limit_counters.c.bucket, rate_limit_counters.c.window_start, rate_limit_counters.c.hits).where(
                rate_limit_counters.c.bucket.in_([f"capture:ip:{ip}", f"capture:org:{org.id}"])
            )
        ).all()
    assert {(r.bucket, r.hits) for r in rows} == {(f"capture:ip:{ip}", 3), (f"capture:org:{org.id}", 3)}
    assert {r.window_start for r in rows} == {NOW.replace(second=0, microsecond=0)}


def test_the_cleanup_job_deletes_counters_older_than_an_hour(ctx):
    from task_lifecycle.handler import lambda_handler as task_lifecycle

    now = datetime.now(UTC).replace(second=0, microsecond=0)
    old, recent = f"capture:ip:{fresh_ip()}", f"capture:ip:{fresh_ip()}"
    with get_engine().begin() as conn:
        conn.execute(
            insert(rate_limit_counters),
            [
                {"bucket": old, "window_start": now - timedelta(hours=2), "hits": 5},
                {"bucket": recent, "window_start": now - timedelta(minutes=5), "hits": 5},
            ],
        )
    result = task_lifecycle({"job": "retention_cleanup"}, ctx)
    assert result["job"] == "retention_cleanup"
    assert result["rate_limit_counters"] >= 1
    with get_engine().connect() as conn:
        left = (
            conn.execute(select(rate_limit_counters.c.bucket).where(rate_limit_counters.c.bucket.in_([old, recent])))
            .scalars()
            .all()
        )
    assert left == [recent]


def test_a_limit_that_is_not_a_number_falls_back_to_the_default(clock, monkeypatch):
    monkeypatch.setenv("CAPTURE_LIMIT_PER_IP_PER_MINUTE", "lots")
    org, ip = make_organization(), fresh_ip()
    assert [capture(org.id, _lead(i), ip=ip).status for i in range(2)] == [201, 201]
    with get_engine().connect() as conn:
        count = conn.execute(
            select(func.count())
            .select_from(rate_limit_counters)
            .where(rate_limit_counters.c.bucket == f"capture:ip:{ip}")
        ).scalar_one()
    assert count == 1
