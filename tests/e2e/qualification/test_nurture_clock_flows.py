"""A nurtured lead played forward through the local stack's clock: the `nurture_reevaluation` job looks at it
only once its nurture period is over, and then (spec §4: "Nurturing — Engagement or score improves → Scored —
Re-evaluated against current scoring model") takes it back to scored when its score improved, or keeps it in
nurture for another period when it did not."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

NURTURE_DAYS = 7
# A referral alone scores 20, below the threshold of 50; an email address adds 40.
MODEL = {
    "rules": [
        {"kind": "source", "sources": ["referral"], "weight": 20},
        {"kind": "field", "field": "email", "weight": 40},
    ],
    "qualifyThreshold": 50,
    "nurtureDays": NURTURE_DAYS,
}


def _ok(reply: Any, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.json()["data"]


def _nurtured_lead(stack: LocalStackClient) -> tuple[str, str, str]:
    demo = stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    _ok(stack.request("POST", f"/organizations/{org}/scoring-models", token=owner, json_body=MODEL), 201)
    lead = _ok(
        stack.request(
            "POST",
            f"/organizations/{org}/leads",
            token=owner,
            json_body={"name": "Tamar", "phone": "+972501234567", "source": "referral"},
        ),
        201,
    )
    stack.wait_until_idle()
    path = f"/organizations/{org}/leads/{lead['id']}/qualification"
    scored = _ok(stack.request("GET", path, token=owner))
    assert (scored["state"], scored["score"]) == ("scored", 20)
    nurtured = _ok(stack.request("POST", f"{path}/nurture", token=owner, json_body={}))
    assert nurtured["state"] == "nurturing"
    now = datetime.fromisoformat(stack.request("GET", "/_local/clock").json()["data"]["now"])
    assert abs(datetime.fromisoformat(nurtured["reevaluateAt"]) - (now + timedelta(days=NURTURE_DAYS))) < timedelta(
        minutes=1
    )
    return org, owner, lead["id"]


def _reevaluate(stack: LocalStackClient) -> None:
    assert stack.request("POST", "/_local/tick", json_body={"job": "nurture_reevaluation"}).status == 200
    stack.wait_until_idle()


def test_a_nurtured_lead_whose_score_improved_is_back_to_scored_when_its_nurture_period_ends(
    local_clock: LocalStackClient,
) -> None:
    org, owner, lead_id = _nurtured_lead(local_clock)
    path = f"/organizations/{org}/leads/{lead_id}/qualification"
    _ok(
        local_clock.request(
            "PATCH", f"/organizations/{org}/leads/{lead_id}", token=owner, json_body={"email": "tamar@example.com"}
        )
    )

    local_clock.advance_clock(f"P{NURTURE_DAYS - 1}D")
    _reevaluate(local_clock)
    assert _ok(local_clock.request("GET", path, token=owner))["state"] == "nurturing"

    local_clock.advance_clock("P1DT1H")
    _reevaluate(local_clock)
    back = _ok(local_clock.request("GET", path, token=owner))

    assert (back["state"], back["score"], back["reevaluateAt"]) == ("scored", 60, None)


def test_a_nurtured_lead_whose_score_did_not_improve_stays_in_nurture_for_another_period(
    local_clock: LocalStackClient,
) -> None:
    org, owner, lead_id = _nurtured_lead(local_clock)
    path = f"/organizations/{org}/leads/{lead_id}/qualification"

    moved = local_clock.advance_clock(f"P{NURTURE_DAYS}DT1H")
    _reevaluate(local_clock)
    kept = _ok(local_clock.request("GET", path, token=owner))

    assert (kept["state"], kept["score"]) == ("nurturing", 20)
    next_time = datetime.fromisoformat(kept["reevaluateAt"])
    expected = datetime.fromisoformat(moved["now"]) + timedelta(days=NURTURE_DAYS)
    assert abs(next_time - expected) < timedelta(minutes=1)
