"""Spec section 5 through the API: each transition with its rule, the sealing of closed-won (service and
database), compensations, closed-lost reactivation audited, and two staff moving one deal at once."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import update
from sqlalchemy.exc import DBAPIError

from leadcrm.deals import transitions
from leadcrm.deals.rules.deals import Evidence, LossReason
from leadcrm.deals.tables import deals
from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor, Role
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError
from tests.support.api import call_api
from tests.support.concurrency import run_together
from tests.support.deals_helpers import (
    EVIDENCE,
    deal_row,
    deals_path,
    events_of,
    history_of,
    move,
    ok,
    open_deal,
    read_deal,
    stage_id,
    timeline_types,
    walk_to,
)
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Deal writes publish their events after commit; the bus exists."""


@pytest.fixture
def coach():
    return make_caller(role="coach")


def _error(response) -> tuple[int, str | None]:
    return response.status, response.error_code


def test_a_deal_walks_the_table_from_new_to_closed_won(coach):
    deal = walk_to(coach, open_deal(coach), "won")
    assert (deal["status"], deal["stageKind"], deal["version"]) == ("won", "won", 5)
    assert deal["closedAt"] is not None and deal["closeReason"] == "Signed the annual plan"
    assert (deal["effectiveProbability"], deal["effectiveForecastCategory"]) == (100, "closed")
    moves = [h for h in history_of(deal["id"]) if h["type"] == "stage_changed"]
    assert [(h["from_status"], h["to_status"]) for h in moves] == [("open", "open")] * 3 + [("open", "won")]
    assert moves[1]["payload"] == {"documentRef": "proposal-annual-plan.pdf"}
    assert moves[-1]["payload"]["sealed"] == {"valueMinor": 120_000, "currency": "EUR"}


def test_every_move_is_on_the_leads_timeline_and_emits_deal_stage_changed(coach):
    deal = walk_to(coach, open_deal(coach), "proposal")
    assert timeline_types(deal["leadId"])[-2:] == ["deal_stage_changed", "deal_stage_changed"]
    events = events_of(coach.org_id, "deal.stage_changed")
    assert [e["payload"]["toStageId"] for e in events] == [stage_id(coach, "discovery"), stage_id(coach, "proposal")]
    assert set(events[0]["payload"]) == {
        "dealId",
        "leadId",
        "membershipId",
        "actorUserId",
        "fromStageId",
        "toStageId",
        "fromStatus",
        "toStatus",
    }


@pytest.mark.parametrize(
    ("kind", "evidence", "code"),
    [
        ("discovery", {}, "DISCOVERY_ACTIVITY_REQUIRED"),
        ("proposal", {"documentRef": None, "quoteRef": None}, "PROPOSAL_REFERENCE_REQUIRED"),
        ("negotiation", {}, "NEGOTIATION_ACTIVITY_REQUIRED"),
        ("won", {}, "CLOSE_REASON_REQUIRED"),
        ("lost", {"lossNote": "no code given"}, "LOSS_REASON_REQUIRED"),
    ],
)
def test_each_step_without_its_evidence_is_a_400_and_changes_nothing(coach, kind, evidence, code):
    before = {"discovery": "new", "proposal": "discovery", "negotiation": "proposal"}.get(kind, "negotiation")
    deal = walk_to(coach, open_deal(coach), before)
    assert _error(move(coach, deal, kind, **evidence)) == (400, code)
    assert read_deal(coach, deal["id"])["version"] == deal["version"]


def test_a_proposal_may_name_a_quote_instead_of_a_document(coach):
    deal = walk_to(coach, open_deal(coach), "discovery")
    assert ok(move(coach, deal, "proposal", quoteRef="Q-2026-118"))["stageKind"] == "proposal"


def test_a_loss_reason_must_be_one_of_the_codes(coach):
    deal = walk_to(coach, open_deal(coach), "negotiation")
    assert _error(move(coach, deal, "lost", lossReason="too expensive")) == (400, "VALIDATION_FAILED")


@pytest.mark.parametrize(
    ("start", "target"), [("new", "proposal"), ("new", "won"), ("discovery", "lost"), ("proposal", "new")]
)
def test_skipping_a_step_going_back_or_closing_before_negotiation_is_a_409(coach, start, target):
    deal = walk_to(coach, open_deal(coach), start)
    evidence = {k: v for step in EVIDENCE.values() for k, v in step.items()}
    assert _error(move(coach, deal, target, **evidence)) == (409, "DEAL_TRANSITION_NOT_ALLOWED")


def test_a_stage_of_another_organization_is_not_found(coach):
    stranger = make_caller(role="coach")
    deal = open_deal(coach)
    payload = {"version": 1, "stageId": stage_id(stranger, "discovery"), **EVIDENCE["discovery"]}
    response = call_api("POST", f"{deals_path(coach.org_id, deal['id'])}/move", sub=coach.sub, body=payload)
    assert _error(response) == (404, "DEAL_STAGE_NOT_FOUND")


# -- closed-won is sealed -----------------------------------------------------------------------------------


@pytest.fixture
def won(coach):
    return walk_to(coach, open_deal(coach), "won")


def test_a_closed_won_deal_cannot_be_edited(coach, won):
    response = call_api(
        "PATCH", deals_path(coach.org_id, won["id"]), sub=coach.sub, body={"version": won["version"], "valueMinor": 1}
    )
    assert _error(response) == (409, "DEAL_SEALED")


def test_a_closed_won_deal_cannot_be_moved_or_reopened(coach, won):
    assert _error(move(coach, won, "lost", **EVIDENCE["lost"])) == (409, "DEAL_SEALED")
    reopen = call_api(
        "POST",
        f"{deals_path(coach.org_id, won['id'])}/reactivate",
        sub=coach.sub,
        body={"version": won["version"], "reason": "customer changed their mind"},
    )
    assert _error(reopen) == (409, "DEAL_SEALED")
    assert deal_row(won["id"])["status"] == "won"


@pytest.mark.parametrize(
    "values",
    [
        {"value_minor": 1},
        {"status": "open", "closed_at": None, "close_reason": None},
        {"closed_at": None},
        {"currency": "USD"},
    ],
)
def test_the_database_refuses_any_writer_that_changes_a_sealed_deal(won, values):
    with pytest.raises(DBAPIError, match="sealed"), get_engine().begin() as conn:
        conn.execute(update(deals).where(deals.c.id == uuid.UUID(won["id"])).values(**values))
    assert deal_row(won["id"])["value_minor"] == 120_000


def test_erasing_the_lead_of_a_sealed_deal_keeps_the_deal_without_the_person(won):
    from sqlalchemy import delete

    from leadcrm.leads.tables import lead_activity_events, leads

    lead_id = uuid.UUID(won["leadId"])
    with get_engine().begin() as conn:
        conn.execute(delete(lead_activity_events).where(lead_activity_events.c.lead_id == lead_id))
        conn.execute(delete(leads).where(leads.c.id == lead_id))
    row = deal_row(won["id"])
    assert (row["lead_id"], row["status"], row["value_minor"]) == (None, "won", 120_000)


def test_a_correction_of_a_won_deal_is_a_compensating_record_beside_it(coach, won):
    response = call_api(
        "POST",
        f"{deals_path(coach.org_id, won['id'])}/compensations",
        sub=coach.sub,
        body={"amountMinor": -20_000, "reason": "Two months refunded", "documentRef": "CN-7"},
    )
    assert response.status == 201
    assert (response.data["amountMinor"], response.data["currency"]) == (-20_000, "EUR")
    detail = read_deal(coach, won["id"])
    assert (detail["valueMinor"], detail["netValueMinor"], detail["version"]) == (120_000, 100_000, won["version"])
    assert detail["history"][0]["type"] == "compensation_recorded"
    assert timeline_types(won["leadId"])[-1] == "deal_compensation_recorded"
    assert len(events_of(coach.org_id, "deal.compensation_recorded")) == 1


def test_only_a_won_deal_takes_a_compensation(coach):
    deal = open_deal(coach)
    response = call_api(
        "POST",
        f"{deals_path(coach.org_id, deal['id'])}/compensations",
        sub=coach.sub,
        body={"amountMinor": 5, "reason": "x"},
    )
    assert _error(response) == (409, "DEAL_NOT_WON")


# -- closed-lost ----------------------------------------------------------------------------------------------


def test_closing_lost_keeps_the_code_and_a_lost_deal_is_not_edited(coach):
    lost = walk_to(coach, open_deal(coach), "lost")
    assert (lost["status"], lost["lossReason"], lost["lossNote"]) == ("lost", "price", "Went with a cheaper studio")
    patch = call_api(
        "PATCH", deals_path(coach.org_id, lost["id"]), sub=coach.sub, body={"version": lost["version"], "valueMinor": 3}
    )
    assert _error(patch) == (409, "DEAL_CLOSED")


def test_a_closed_lost_deal_is_reactivated_into_discovery_and_the_reactivation_audited(coach):
    lost = walk_to(coach, open_deal(coach), "lost")
    path = f"{deals_path(coach.org_id, lost['id'])}/reactivate"
    assert _error(call_api("POST", path, sub=coach.sub, body={"version": lost["version"], "reason": " "})) == (
        400,
        "VALIDATION_FAILED",
    )
    reopened = ok(call_api("POST", path, sub=coach.sub, body={"version": lost["version"], "reason": "Budget approved"}))
    assert (reopened["status"], reopened["stageKind"], reopened["closedAt"], reopened["lossReason"]) == (
        "open",
        "discovery",
        None,
        None,
    )
    audit = history_of(lost["id"])[-1]
    assert (audit["type"], audit["actor_user_id"], audit["reason"], audit["from_status"], audit["to_status"]) == (
        "reactivated",
        coach.user.id,
        "Budget approved",
        "lost",
        "open",
    )
    assert audit["payload"]["undidLoss"]["lossReason"] == "price"
    assert timeline_types(lost["leadId"])[-1] == "deal_reactivated"
    assert len(events_of(coach.org_id, "deal.reactivated")) == 1
    assert events_of(coach.org_id, "deal.stage_changed")[-1]["payload"]["reactivated"] is True


def test_an_open_deal_is_not_reactivated(coach):
    deal = open_deal(coach)
    response = call_api(
        "POST", f"{deals_path(coach.org_id, deal['id'])}/reactivate", sub=coach.sub, body={"version": 1, "reason": "x"}
    )
    assert _error(response) == (409, "DEAL_NOT_REACTIVATABLE")


# -- two staff, one deal --------------------------------------------------------------------------------------


def test_a_move_made_from_a_stale_version_is_refused(coach):
    deal = open_deal(coach)
    ok(move(coach, deal, "discovery", **EVIDENCE["discovery"]))
    assert _error(move(coach, deal, "discovery", **EVIDENCE["discovery"])) == (409, "DEAL_VERSION_CONFLICT")


def test_two_staff_moving_one_deal_at_once_cannot_both_win(coach, private_engine):
    deal = walk_to(coach, open_deal(coach), "negotiation")
    actor = Actor(coach.user.id, coach.org_id, coach.membership.id, Role.COACH, frozenset({LEAD_MANAGEMENT}))
    won_stage, lost_stage = uuid.UUID(stage_id(coach, "won")), uuid.UUID(stage_id(coach, "lost"))

    def close(stage, evidence):
        def run():
            with UnitOfWork(engine=private_engine, publisher=lambda events: None) as uow:
                result = transitions.move_deal(uow, actor, uuid.UUID(deal["id"]), deal["version"], stage, evidence)
                uow.commit()
                return result["status"]

        return run

    results, errors = run_together(
        [
            close(won_stage, Evidence(close_reason="Signed")),
            close(lost_stage, Evidence(loss_reason=LossReason.PRICE)),
        ]
    )
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    [loser] = [e for e in errors if e is not None]
    assert isinstance(loser, AppError) and loser.code == "DEAL_VERSION_CONFLICT"
    assert deal_row(deal["id"])["status"] == winners[0]
    assert len([h for h in history_of(deal["id"]) if h["to_status"] in ("won", "lost")]) == 1
