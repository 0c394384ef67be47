"""Deals through the local stack: the scheduler's rotting sweep, and a platform departure event travelling
the bus and the task_lifecycle queue to hand a coach's deals over."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select, update

from leadcrm.deals.tables import deals
from leadcrm.directory.tables import memberships
from tests.support.database import engine_for

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

EVIDENCE = {
    "discovery": {"activityAt": "2026-11-20T10:00:00+00:00"},
    "proposal": {"quoteRef": "Q-2026-001"},
}


def _ok(reply: Any, status: int = 200) -> Any:
    assert reply.status == status, reply.body
    return reply.json()["data"]


def _settle(stack: LocalStackClient) -> None:
    """Until idle: the consumer's own events (ownership.handed_over) wait in the outbox for the relay, which
    the scheduler runs once a minute; ticking it drains them now."""
    for _ in range(3):
        try:
            stack.wait_until_idle(timeout=10)
            return
        except AssertionError:
            stack.request("POST", "/_local/tick", json_body={"job": "outbox_relay"})
    stack.wait_until_idle()


def _open_deal_at_proposal(stack: LocalStackClient, org: str, token: str) -> dict[str, Any]:
    lead = _ok(stack.request("POST", f"/organizations/{org}/leads", token=token, json_body={"name": "Dana"}), 201)
    deal = _ok(
        stack.request(
            "POST",
            f"/organizations/{org}/deals",
            token=token,
            json_body={
                "title": "Ten-class package",
                "offerType": "package",
                "leadId": lead["id"],
                "valueMinor": 45_000,
                "currency": "ILS",
                "expectedCloseDate": "2026-12-31",
            },
        ),
        201,
    )
    stages = _ok(stack.request("GET", f"/organizations/{org}/deals/pipeline", token=token))["stages"]
    for kind in ("discovery", "proposal"):
        stage = next(s for s in stages if s["kind"] == kind)
        body = {"version": deal["version"], "stageId": stage["id"], **EVIDENCE[kind]}
        deal = _ok(stack.request("POST", f"/organizations/{org}/deals/{deal['id']}/move", token=token, json_body=body))
    return deal


def test_the_scheduled_sweep_stalls_an_idle_proposal_and_plans_the_reengagement(
    local_stack: LocalStackClient, local_stack_database: str
) -> None:
    demo = local_stack.new_organization()
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]
    deal = _open_deal_at_proposal(local_stack, org, coach)
    engine = engine_for(local_stack_database)
    try:
        with engine.begin() as conn:
            conn.execute(
                update(deals)
                .where(deals.c.id == uuid.UUID(deal["id"]))
                .values(last_activity_at=datetime.now(UTC) - timedelta(days=30))
            )
    finally:
        engine.dispose()

    assert local_stack.request("POST", "/_local/tick", json_body={"job": "deal_rotting_sweep"}).status == 200
    local_stack.wait_until_idle()

    assert _ok(local_stack.request("GET", f"/organizations/{org}/deals/{deal['id']}", token=coach))["status"] == (
        "stalled"
    )
    tasks = _ok(local_stack.request("GET", f"/organizations/{org}/tasks?leadId={deal['leadId']}", token=coach))
    assert [t["title"] for t in tasks if t["title"].startswith("Re-engage")] == [
        "Re-engage stalled deal: Ten-class package"
    ]


def test_a_departure_event_on_the_bus_hands_the_coachs_open_deals_to_the_default_assignee(
    local_stack: LocalStackClient, local_stack_database: str
) -> None:
    demo = local_stack.new_organization()
    org, users = demo["organizationId"], demo["users"]
    coach, owner, admin_id = users["coach"]["token"], users["owner"]["token"], users["admin"]["userId"]
    deal = _open_deal_at_proposal(local_stack, org, coach)
    _ok(
        local_stack.request(
            "PUT", f"/organizations/{org}/default-assignee", token=owner, json_body={"userId": admin_id}
        )
    )
    engine = engine_for(local_stack_database)
    try:
        with engine.connect() as conn:
            membership_id = conn.execute(
                select(memberships.c.id).where(
                    memberships.c.organization_id == uuid.UUID(org),
                    memberships.c.user_id == uuid.UUID(users["coach"]["userId"]),
                )
            ).scalar_one()
    finally:
        engine.dispose()

    sent = local_stack.request(
        "POST",
        "/_local/events",
        json_body={
            "detailType": "membership.status_changed",
            "detail": {"organizationId": org, "membershipId": str(membership_id), "status": "cancelled"},
        },
    )
    assert sent.status in (200, 201, 202), sent.body
    _settle(local_stack)

    after = _ok(local_stack.request("GET", f"/organizations/{org}/deals/{deal['id']}", token=owner))
    assert after["assigneeUserId"] == admin_id
    assert after["history"][0]["type"] == "owner_handed_over"
    assert local_stack.request("GET", f"/organizations/{org}/deals", token=coach).status == 403  # access is gone
