"""The rotting sweep (job `deal_rotting_sweep`, run through the task_lifecycle function as the scheduler does):
open proposal and negotiation deals idle beyond their stage's threshold stall, with an alert and a task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.api import call_api
from tests.support.deals_helpers import (
    EVIDENCE,
    deal_row,
    deals_path,
    events_of,
    history_of,
    move,
    ok,
    open_deal,
    set_deal_columns,
    tasks_of_deal,
    timeline_types,
    walk_to,
)
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Deal writes publish their events after commit; the bus exists."""


@pytest.fixture
def sweep(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda: lambda_handler({"job": "deal_rotting_sweep"}, ctx)


@pytest.fixture
def coach():
    return make_caller(role="coach")


def _idle(deal, days: float) -> None:
    set_deal_columns(deal["id"], last_activity_at=datetime.now(UTC) - timedelta(days=days))


def test_a_negotiation_idle_beyond_its_threshold_stalls_on_its_stage(coach, sweep):
    deal = walk_to(coach, open_deal(coach), "negotiation")
    _idle(deal, 15)  # the default Negotiation stage rots after 14 days

    result = sweep()

    row = deal_row(deal["id"])
    assert (row["status"], str(row["stage_id"]), row["version"]) == ("stalled", deal["stageId"], deal["version"] + 1)
    assert row["stalled_at"] is not None
    assert result["stalled"] >= 1


def test_a_stall_raises_the_alert_writes_the_history_and_the_timeline_and_plans_the_reengagement(coach, sweep):
    deal = walk_to(coach, open_deal(coach, title="Ten-class package"), "proposal")
    _idle(deal, 20)
    sweep()

    stall = history_of(deal["id"])[-1]
    assert (stall["type"], stall["from_status"], stall["to_status"], stall["actor_user_id"]) == (
        "stalled",
        "open",
        "stalled",
        None,
    )
    assert timeline_types(deal["leadId"])[-1] == "deal_stalled"
    [alert] = events_of(coach.org_id, "deal.stalled")
    assert (alert["payload"]["dealId"], alert["payload"]["ownerUserId"]) == (deal["id"], str(coach.user.id))
    [task] = tasks_of_deal(deal["id"])
    assert (task["title"], task["assignee_user_id"], str(task["linked_lead_id"]), task["status"]) == (
        "Re-engage stalled deal: Ten-class package",
        coach.user.id,
        deal["leadId"],
        "pending",
    )
    assert (task["source"], task["priority"]) == ("deal_rotting", "high")
    assert task["due_date"] == datetime.now(UTC).date()  # today in the organization's timezone (UTC here)


def test_a_second_run_stalls_nothing_twice_and_opens_no_second_task(coach, sweep):
    deal = walk_to(coach, open_deal(coach), "proposal")
    _idle(deal, 20)
    sweep()
    sweep()
    assert len(tasks_of_deal(deal["id"])) == 1
    assert [h["type"] for h in history_of(deal["id"])].count("stalled") == 1


@pytest.mark.parametrize(("kind", "idle_days"), [("proposal", 13), ("new", 90), ("discovery", 90)])
def test_deals_within_their_threshold_or_on_stages_that_do_not_rot_stay_open(coach, sweep, kind, idle_days):
    deal = walk_to(coach, open_deal(coach), kind)
    _idle(deal, idle_days)
    sweep()
    assert deal_row(deal["id"])["status"] == "open" and tasks_of_deal(deal["id"]) == []


def test_a_stage_without_a_threshold_never_rots(coach, sweep):
    pipeline = ok(call_api("GET", f"{deals_path(coach.org_id)}/pipeline", sub=coach.sub))
    owner = make_caller(role="owner", organization=coach.organization)
    proposal = next(s for s in pipeline["stages"] if s["kind"] == "proposal")
    ok(
        call_api(
            "PATCH",
            f"{deals_path(coach.org_id)}/pipeline/stages/{proposal['id']}",
            sub=owner.sub,
            body={"rottingDays": None},
        )
    )
    deal = walk_to(coach, open_deal(coach), "proposal")
    _idle(deal, 400)
    sweep()
    assert deal_row(deal["id"])["status"] == "open"


def test_a_stalled_deal_moves_only_after_a_reactivation_back_to_the_stage_it_stalled_on(coach, sweep):
    deal = walk_to(coach, open_deal(coach), "negotiation")
    _idle(deal, 15)
    sweep()
    stalled = ok(call_api("GET", deals_path(coach.org_id, deal["id"]), sub=coach.sub))
    assert (move(coach, stalled, "won", **EVIDENCE["won"]).error_code) == "DEAL_STALLED"

    reactivated = ok(
        call_api(
            "POST",
            f"{deals_path(coach.org_id, deal['id'])}/reactivate",
            sub=coach.sub,
            body={"version": stalled["version"], "reason": "Customer replied to the follow-up"},
        )
    )
    assert (reactivated["status"], reactivated["stageId"], reactivated["stalledAt"]) == ("open", deal["stageId"], None)
    audit = history_of(deal["id"])[-1]
    assert (audit["type"], audit["reason"], audit["from_status"]) == (
        "reactivated",
        "Customer replied to the follow-up",
        "stalled",
    )
    assert ok(move(coach, reactivated, "won", **EVIDENCE["won"]))["status"] == "won"
    sweep()  # the clock restarted with the reactivation, and won deals never rot
    assert deal_row(deal["id"])["status"] == "won"


def test_the_sweep_skips_a_deal_someone_is_changing_right_now(coach, ctx, private_engine):
    from sqlalchemy import select

    from leadcrm.deals.rotting import run_rotting_sweep
    from leadcrm.deals.tables import deals

    deal = walk_to(coach, open_deal(coach), "proposal")
    _idle(deal, 20)
    with private_engine.connect() as holder:
        holder.execute(select(deals.c.id).where(deals.c.id == deal_row(deal["id"])["id"]).with_for_update())
        run_rotting_sweep()  # does not wait for the lock
        assert deal_row(deal["id"])["status"] == "open"
        holder.rollback()
    run_rotting_sweep()
    assert deal_row(deal["id"])["status"] == "stalled"
