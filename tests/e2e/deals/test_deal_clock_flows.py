"""A deal played forward through the local stack's clock: a proposal left idle beyond its stage's rotting
days stalls on the scheduler's sweep, with the stale-deal alert's re-engagement task, and a reactivation
takes it back to the stage it stalled on with its rotting clock restarted (spec §5: "Proposal or Negotiation
— Deal stalled beyond rotting threshold → Stalled"; "Stalled — Customer re-engages → Previous open stage —
Reason for reactivation recorded"). The seeded pipeline's Proposal rots after 14 idle days."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

PROPOSAL_ROTTING_DAYS = 14
EVIDENCE = {"discovery": {"activityAt": "2026-11-20T10:00:00+00:00"}, "proposal": {"quoteRef": "Q-2026-042"}}


def _ok(reply: Any, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.json()["data"]


def _deal_at_proposal(stack: LocalStackClient, org: str, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    lead = _ok(stack.request("POST", f"/organizations/{org}/leads", token=token, json_body={"name": "Omer"}), 201)
    deal = _ok(
        stack.request(
            "POST",
            f"/organizations/{org}/deals",
            token=token,
            json_body={
                "title": "Yearly plan",
                "offerType": "plan",
                "leadId": lead["id"],
                "valueMinor": 120_000,
                "currency": "ILS",
                "expectedCloseDate": "2027-06-30",
            },
        ),
        201,
    )
    stages = _ok(stack.request("GET", f"/organizations/{org}/deals/pipeline", token=token))["stages"]
    for kind in ("discovery", "proposal"):
        stage = next(s for s in stages if s["kind"] == kind)
        body = {"version": deal["version"], "stageId": stage["id"], **EVIDENCE[kind]}
        deal = _ok(stack.request("POST", f"/organizations/{org}/deals/{deal['id']}/move", token=token, json_body=body))
    proposal = next(s for s in stages if s["kind"] == "proposal")
    assert proposal["rottingDays"] == PROPOSAL_ROTTING_DAYS
    return deal, proposal


def _rotting_sweep(stack: LocalStackClient) -> None:
    assert stack.request("POST", "/_local/tick", json_body={"job": "deal_rotting_sweep"}).status == 200
    stack.wait_until_idle()


def test_an_idle_proposal_stalls_after_its_rotting_days_and_is_reactivated_to_proposal(
    local_clock: LocalStackClient,
) -> None:
    demo = local_clock.new_organization()
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]
    deal, proposal = _deal_at_proposal(local_clock, org, coach)
    path = f"/organizations/{org}/deals/{deal['id']}"

    local_clock.advance_clock(f"P{PROPOSAL_ROTTING_DAYS - 1}D")
    _rotting_sweep(local_clock)
    assert _ok(local_clock.request("GET", path, token=coach))["status"] == "open"

    local_clock.advance_clock("P1DT1H")
    _rotting_sweep(local_clock)
    stalled = _ok(local_clock.request("GET", path, token=coach))
    assert (stalled["status"], stalled["stageId"]) == ("stalled", proposal["id"])
    tasks = _ok(local_clock.request("GET", f"/organizations/{org}/tasks?leadId={deal['leadId']}", token=coach))
    assert [t["title"] for t in tasks if t["title"].startswith("Re-engage")] == [
        "Re-engage stalled deal: Yearly plan"
    ]

    body = {"version": stalled["version"], "reason": "Called back, wants the yearly plan after all"}
    reactivated = _ok(local_clock.request("POST", f"{path}/reactivate", token=coach, json_body=body))

    assert (reactivated["status"], reactivated["stageId"]) == ("open", proposal["id"])
    # The re-engagement is activity: the rotting days count again from the reactivation, on the clock's time.
    local_clock.advance_clock(f"P{PROPOSAL_ROTTING_DAYS - 1}D")
    _rotting_sweep(local_clock)
    assert _ok(local_clock.request("GET", path, token=coach))["status"] == "open"
    local_clock.advance_clock("P1DT1H")
    _rotting_sweep(local_clock)
    assert _ok(local_clock.request("GET", path, token=coach))["status"] == "stalled"
