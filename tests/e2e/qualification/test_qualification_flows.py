"""Scoring, qualification and a merge through the local stack: lead.created scores a new lead via the bus,
the scheduler's jobs apply a model change, a merged duplicate's id answers with the survivor, and an undo
puts both back."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def test_a_new_lead_is_scored_through_the_bus_and_rescored_after_a_model_change(
    local_stack: LocalStackClient,
) -> None:
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    rules = [{"kind": "source", "sources": ["referral"], "weight": 30}]
    body = {"rules": rules, "qualifyThreshold": 30}
    assert (
        local_stack.request("POST", f"/organizations/{org}/scoring-models", token=owner, json_body=body).status == 201
    )
    lead = local_stack.request(
        "POST", f"/organizations/{org}/leads", token=owner, json_body={"name": "Avi", "source": "referral"}
    ).json()["data"]
    local_stack.wait_until_idle()

    path = f"/organizations/{org}/leads/{lead['id']}/qualification"
    scored = local_stack.request("GET", path, token=owner).json()["data"]
    assert (scored["state"], scored["score"], scored["scoreModelVersion"]) == ("scored", 30, 1)

    body = {"rules": [{"kind": "source", "sources": ["referral"], "weight": 45}], "qualifyThreshold": 45}
    changed = local_stack.request("POST", f"/organizations/{org}/scoring-models", token=owner, json_body=body)
    assert changed.status == 201
    local_stack.request("POST", "/_local/tick", json_body={"job": "rescore_leads"})

    rescored = local_stack.request("GET", path, token=owner).json()["data"]
    assert (rescored["score"], rescored["scoreModelVersion"]) == (45, 2)


def test_a_merged_duplicate_answers_with_the_survivor_until_the_merge_is_undone(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]
    leads = f"/organizations/{org}/leads"
    survivor = local_stack.request("POST", leads, token=coach, json_body={"name": "Dana Cohen"}).json()["data"]
    duplicate = local_stack.request("POST", leads, token=coach, json_body={"name": "Dana"}).json()["data"]
    local_stack.wait_until_idle()

    merged = local_stack.request(
        "POST", f"{leads}/{survivor['id']}/merge", token=coach, json_body={"mergedLeadId": duplicate["id"]}
    )
    assert merged.status == 200, merged.body
    redirected = local_stack.request("GET", f"{leads}/{duplicate['id']}", token=coach).json()
    assert (redirected["data"]["id"], redirected["meta"]["redirectedFrom"]) == (survivor["id"], duplicate["id"])

    merge_id = merged.json()["data"]["mergeId"]
    assert local_stack.request("POST", f"/organizations/{org}/lead-merges/{merge_id}/undo", token=coach).status == 200
    assert local_stack.request("GET", f"{leads}/{duplicate['id']}", token=coach).json()["data"]["id"] == duplicate["id"]
