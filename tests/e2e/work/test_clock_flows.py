"""Time-dependent work played forward through the local stack's clock: the morning digest of the day
(job `daily_digest`: 07:00–10:00 on the organization's wall clock, once per staff member and local day, counts
only), and the public capture's throttling window (a client IP's submissions per minute).

`POST /_local/clock {"set": …}` puts the stack on an organization's morning whatever the real hour."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

CAPTURE_LIMIT_PER_IP = 10  # per minute: leads.rate_limits.DEFAULT_CAPTURE_LIMIT_PER_IP


def _ok(reply: Any, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.json()["data"]


def _clock_now(stack: LocalStackClient) -> datetime:
    return datetime.fromisoformat(_ok(stack.request("GET", "/_local/clock"))["now"])


def _digests(stack: LocalStackClient, organization_name: str, *, at_least: int) -> list[dict[str, Any]]:
    """The digest mails of one organization's owner (whose follow-up it is; the admin hears of the leads
    needing attention) once `at_least` were sent. One run mails up to 200 people (every organization of the
    shared stack has its morning too): a few runs reach this one."""
    mails: list[dict[str, Any]] = []
    for _ in range(10):
        assert stack.request("POST", "/_local/tick", json_body={"job": "daily_digest"}).status == 200
        mails = [
            m
            for m in stack.sent_emails()
            if m["subject"].startswith(f"{organization_name}:") and "owner+" in str(m["to"])
        ]
        if len(mails) >= at_least:
            break
    return mails


def test_the_morning_digest_is_sent_once_on_each_local_morning_with_that_days_counts(
    local_clock: LocalStackClient,
) -> None:
    name = f"Clock Digest {uuid.uuid4().hex[:8]}"
    demo = _ok(local_clock.request("POST", "/_local/orgs", json_body={"name": name, "timezone": "UTC"}), 201)
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    lead_id = _ok(
        local_clock.request("POST", f"/organizations/{org}/leads", token=owner, json_body={"name": "Rina"}), 201
    )["id"]
    day = (_clock_now(local_clock) + timedelta(days=1)).date()
    follow_up = {"at": f"{day.isoformat()}T12:00:00+00:00", "type": "call"}
    _ok(local_clock.request("PUT", f"/organizations/{org}/leads/{lead_id}/follow-up", token=owner, json_body=follow_up))

    local_clock.set_clock(f"{day.isoformat()}T06:30:00Z")  # before the morning window
    assert _digests(local_clock, name, at_least=1) == []

    local_clock.advance_clock("PT1H")  # 07:30: the morning of `day`
    [first] = _digests(local_clock, name, at_least=1)
    assert f"({day.isoformat()})" in first["text"]
    assert "- Overdue tasks: 0" in first["text"] and "- Tasks due today: 1" in first["text"]
    assert len(_digests(local_clock, name, at_least=2)) == 1  # once that day, however often the job runs

    local_clock.advance_clock("P1D")  # the next morning: the follow-up of yesterday noon is overdue
    mails = _digests(local_clock, name, at_least=2)
    assert len(mails) == 2
    second = mails[-1]
    assert f"({(day + timedelta(days=1)).isoformat()})" in second["text"]
    assert "- Overdue tasks: 1" in second["text"] and "- Tasks due today: 0" in second["text"]


def test_a_throttled_client_may_capture_again_in_the_next_minute(local_clock: LocalStackClient) -> None:
    # A minute of its own, a day ahead: the real minute's window (other tests capture from 127.0.0.1 too) is
    # left untouched, and the window this test fills is one nobody reaches once the clock is back.
    local_clock.advance_clock("P1D")
    org = local_clock.new_organization()["organizationId"]
    path = f"/leads/organization/{org}"
    statuses = []
    for n in range(CAPTURE_LIMIT_PER_IP + 1):
        reply = local_clock.request("POST", path, json_body={"name": f"Visitor {n}", "phone": f"+97250000{n:04d}"})
        statuses.append(reply.status)
        if reply.status == 429:
            break
    assert statuses[-1] == 429, statuses
    assert 1 <= int(reply.headers["Retry-After"]) <= 60

    local_clock.advance_clock(f"PT{reply.headers['Retry-After']}S")
    again = local_clock.request("POST", path, json_body={"name": "Visitor again", "phone": "+972500009999"})

    assert again.status == 201, again.body
