"""`/_local/clock`: the local stack's controllable clock, as a dashboard developer drives it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

SLACK = timedelta(seconds=30)


def _now(data: dict) -> datetime:
    return datetime.fromisoformat(data["now"])


def test_the_clock_reads_the_real_time_until_it_is_moved(local_clock: LocalStackClient) -> None:
    shown = local_clock.request("GET", "/_local/clock")
    assert shown.status == 200
    data = shown.json()["data"]
    assert data["offsetSeconds"] == 0
    assert abs(_now(data) - datetime.now(UTC)) < SLACK


@pytest.mark.parametrize(("duration", "seconds"), [("PT72H", 72 * 3600), ("P3D", 3 * 86400), ("PT90M", 5400)])
def test_advance_moves_the_clock_by_an_iso_8601_duration(
    local_clock: LocalStackClient, duration: str, seconds: int
) -> None:
    data = local_clock.advance_clock(duration)
    assert data["offsetSeconds"] == seconds
    assert abs(_now(data) - (datetime.now(UTC) + timedelta(seconds=seconds))) < SLACK
    assert local_clock.request("GET", "/_local/clock").json()["data"]["offsetSeconds"] == seconds


def test_set_puts_the_clock_at_an_instant_from_which_it_keeps_running(local_clock: LocalStackClient) -> None:
    data = local_clock.set_clock("2027-12-24T09:00:00Z")
    assert abs(_now(data) - datetime(2027, 12, 24, 9, 0, tzinfo=UTC)) < SLACK
    later = local_clock.request("GET", "/_local/clock").json()["data"]
    assert _now(later) >= _now(data)


def test_delete_returns_the_clock_to_the_real_time(local_clock: LocalStackClient) -> None:
    local_clock.advance_clock("P3D")
    reply = local_clock.request("DELETE", "/_local/clock")
    assert reply.status == 200
    assert reply.json()["data"]["offsetSeconds"] == 0


def test_api_stamps_follow_the_clock(local_clock: LocalStackClient) -> None:
    org = local_clock.new_organization()
    owner = org["users"]["owner"]["token"]
    moved = local_clock.advance_clock("P10D")
    lead = local_clock.request(
        "POST", f"/organizations/{org['organizationId']}/leads", token=owner, json_body={"name": "Later"}
    ).json()["data"]
    assert abs(datetime.fromisoformat(lead["createdAt"]) - _now(moved)) < SLACK


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"advance": "3 days"},
        {"advance": "P1Y"},
        {"advance": 72},
        {"advance": "P40000D"},  # beyond the clock's reach (100 years)
        {"set": "2026-12-24T09:00:00"},  # no offset: which 09:00?
        {"set": "Christmas"},
        {"set": None},
        {"advance": "PT1H", "set": "2026-12-24T09:00:00Z"},
        {"travel": "PT1H"},
    ],
)
def test_a_body_the_clock_cannot_read_is_refused_and_the_clock_stays(local_clock: LocalStackClient, body: dict) -> None:
    reply = local_clock.request("POST", "/_local/clock", json_body=body)
    assert reply.status == 400, reply.body
    assert reply.json()["error"]["code"] == "VALIDATION_FAILED"
    assert local_clock.request("GET", "/_local/clock").json()["data"]["offsetSeconds"] == 0


def test_a_body_that_is_not_json_is_refused(local_clock: LocalStackClient) -> None:
    reply = local_clock.request("POST", "/_local/clock", raw=b"{advance", headers={"content-type": "application/json"})
    assert (reply.status, reply.json()["error"]["code"]) == (400, "MALFORMED_JSON")
