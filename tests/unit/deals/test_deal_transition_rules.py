"""Spec section 5, the deal state transition table, as pure rules (deals.rules.deals): every pair of kinds and
every status, each validation rule, the sealing of closed-won, stalling and reactivation."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from leadcrm.deals.rules.deals import (
    CONFLICT_REFUSALS,
    DealRefused,
    DealStatus,
    Evidence,
    ForecastCategory,
    LossReason,
    Refusal,
    StageKind,
    StagePoint,
    effective_category,
    effective_probability,
    is_rotting,
    plan_move,
    plan_reactivation,
    require_changeable,
    valid_currency,
    weighted_pipeline,
)

STAGES = {kind: StagePoint(uuid.uuid4(), kind) for kind in StageKind}
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
# Evidence enough for any transition, so the table alone decides what is allowed.
FULL = Evidence(
    activity_at=NOW,
    activity_note="Terms discussed on a call",
    document_ref="doc-17",
    quote_ref="Q-17",
    close_reason="Signed the annual plan",
    loss_reason=LossReason.PRICE,
)
ALLOWED = {
    (StageKind.NEW, StageKind.DISCOVERY),
    (StageKind.DISCOVERY, StageKind.PROPOSAL),
    (StageKind.PROPOSAL, StageKind.NEGOTIATION),
    (StageKind.NEGOTIATION, StageKind.WON),
    (StageKind.NEGOTIATION, StageKind.LOST),
}
OPEN = (StageKind.NEW, StageKind.DISCOVERY, StageKind.PROPOSAL, StageKind.NEGOTIATION)


def _refusal(call) -> Refusal:
    with pytest.raises(DealRefused) as refused:
        call()
    return refused.value.refusal


@pytest.mark.parametrize(("source", "target"), sorted(ALLOWED))
def test_an_open_deal_takes_each_step_of_the_table(source, target):
    transition = plan_move(DealStatus.OPEN, STAGES[source], STAGES[target], FULL)
    expected = {StageKind.WON: DealStatus.WON, StageKind.LOST: DealStatus.LOST}.get(target, DealStatus.OPEN)
    assert (transition.from_stage, transition.to_stage, transition.to_status) == (
        STAGES[source],
        STAGES[target],
        expected,
    )


@pytest.mark.parametrize(
    ("source", "target"),
    [(s, t) for s, t in itertools.product(OPEN, StageKind) if (s, t) not in ALLOWED and s is not t],
)
def test_every_other_step_between_kinds_is_refused_skipping_going_back_or_closing_early(source, target):
    assert _refusal(lambda: plan_move(DealStatus.OPEN, STAGES[source], STAGES[target], FULL)) is Refusal.NOT_ALLOWED


@pytest.mark.parametrize("kind", OPEN)
def test_a_deal_moves_freely_between_two_stages_of_one_kind_without_evidence(kind):
    other = StagePoint(uuid.uuid4(), kind)
    assert plan_move(DealStatus.OPEN, STAGES[kind], other, Evidence()).to_status is DealStatus.OPEN
    assert plan_move(DealStatus.OPEN, other, STAGES[kind], Evidence()).to_stage == STAGES[kind]


def test_moving_to_the_stage_the_deal_is_on_is_refused():
    assert (
        _refusal(lambda: plan_move(DealStatus.OPEN, STAGES[StageKind.NEW], STAGES[StageKind.NEW], FULL))
        is Refusal.SAME_STAGE
    )


@pytest.mark.parametrize(
    ("target", "missing", "refusal"),
    [
        (StageKind.DISCOVERY, {"activity_at": None}, Refusal.ACTIVITY_REQUIRED),
        (StageKind.PROPOSAL, {"document_ref": None, "quote_ref": None}, Refusal.PROPOSAL_REFERENCE_REQUIRED),
        (StageKind.PROPOSAL, {"document_ref": "  ", "quote_ref": ""}, Refusal.PROPOSAL_REFERENCE_REQUIRED),
        (StageKind.NEGOTIATION, {"activity_note": " "}, Refusal.NEGOTIATION_ACTIVITY_REQUIRED),
        (StageKind.WON, {"close_reason": None}, Refusal.CLOSE_REASON_REQUIRED),
        (StageKind.LOST, {"loss_reason": None}, Refusal.LOSS_REASON_REQUIRED),
    ],
)
def test_each_step_needs_its_evidence(target, missing, refusal):
    source = {
        StageKind.DISCOVERY: StageKind.NEW,
        StageKind.PROPOSAL: StageKind.DISCOVERY,
        StageKind.NEGOTIATION: StageKind.PROPOSAL,
        StageKind.WON: StageKind.NEGOTIATION,
        StageKind.LOST: StageKind.NEGOTIATION,
    }[target]
    evidence = Evidence(**{**FULL.__dict__, **missing})
    assert _refusal(lambda: plan_move(DealStatus.OPEN, STAGES[source], STAGES[target], evidence)) is refusal
    assert refusal not in CONFLICT_REFUSALS  # missing evidence is the request's fault: a 400


@pytest.mark.parametrize("reference", [{"document_ref": "deck.pdf"}, {"quote_ref": "Q-2026-004"}])
def test_a_proposal_takes_a_document_or_a_quote_reference(reference):
    evidence = Evidence(**reference)
    transition = plan_move(DealStatus.OPEN, STAGES[StageKind.DISCOVERY], STAGES[StageKind.PROPOSAL], evidence)
    assert transition.to_stage.kind is StageKind.PROPOSAL


def test_closing_won_seals_and_closing_lost_does_not():
    won = plan_move(DealStatus.OPEN, STAGES[StageKind.NEGOTIATION], STAGES[StageKind.WON], FULL)
    lost = plan_move(DealStatus.OPEN, STAGES[StageKind.NEGOTIATION], STAGES[StageKind.LOST], FULL)
    assert (won.seals, lost.seals) == (True, False)


@pytest.mark.parametrize("target", list(StageKind))
def test_a_closed_won_deal_never_moves_again(target):
    assert _refusal(lambda: plan_move(DealStatus.WON, STAGES[StageKind.WON], STAGES[target], FULL)) is Refusal.SEALED


def test_a_closed_won_deal_is_never_edited_nor_reopened():
    assert _refusal(lambda: require_changeable(DealStatus.WON)) is Refusal.SEALED
    assert (
        _refusal(lambda: plan_reactivation(DealStatus.WON, STAGES[StageKind.WON], STAGES[StageKind.DISCOVERY], "x"))
        is Refusal.SEALED
    )
    assert Refusal.SEALED in CONFLICT_REFUSALS  # a 409


@pytest.mark.parametrize("target", list(StageKind))
def test_a_closed_lost_deal_moves_only_through_reactivation(target):
    assert _refusal(lambda: plan_move(DealStatus.LOST, STAGES[StageKind.LOST], STAGES[target], FULL)) is Refusal.CLOSED
    assert _refusal(lambda: require_changeable(DealStatus.LOST)) is Refusal.CLOSED


@pytest.mark.parametrize("target", list(StageKind))
def test_a_stalled_deal_is_reactivated_before_it_moves(target):
    source = STAGES[StageKind.NEGOTIATION]
    assert _refusal(lambda: plan_move(DealStatus.STALLED, source, STAGES[target], FULL)) is Refusal.STALLED


@pytest.mark.parametrize("kind", [StageKind.PROPOSAL, StageKind.NEGOTIATION])
def test_a_stalled_deal_goes_back_to_the_open_stage_it_stalled_on(kind):
    transition = plan_reactivation(DealStatus.STALLED, STAGES[kind], STAGES[StageKind.DISCOVERY], "Called back")
    assert (transition.to_stage, transition.from_status, transition.to_status) == (
        STAGES[kind],
        DealStatus.STALLED,
        DealStatus.OPEN,
    )


def test_a_closed_lost_deal_is_reactivated_into_discovery():
    transition = plan_reactivation(
        DealStatus.LOST, STAGES[StageKind.LOST], STAGES[StageKind.DISCOVERY], "Budget approved after all"
    )
    assert (transition.to_stage, transition.to_status) == (STAGES[StageKind.DISCOVERY], DealStatus.OPEN)


@pytest.mark.parametrize("status", [DealStatus.STALLED, DealStatus.LOST])
@pytest.mark.parametrize("reason", [None, "", "   "])
def test_a_reactivation_needs_a_reason(status, reason):
    current = STAGES[StageKind.LOST if status is DealStatus.LOST else StageKind.PROPOSAL]
    assert (
        _refusal(lambda: plan_reactivation(status, current, STAGES[StageKind.DISCOVERY], reason))
        is Refusal.REACTIVATION_REASON_REQUIRED
    )


def test_an_open_deal_is_not_reactivated():
    assert (
        _refusal(lambda: plan_reactivation(DealStatus.OPEN, STAGES[StageKind.NEW], STAGES[StageKind.DISCOVERY], "x"))
        is Refusal.NOT_STALLED_OR_LOST
    )


@pytest.mark.parametrize("status", [DealStatus.OPEN, DealStatus.STALLED])
def test_open_and_stalled_deals_may_be_edited(status):
    require_changeable(status)


# -- rotting -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "idle_days", "threshold", "rots"),
    [
        (DealStatus.OPEN, StageKind.PROPOSAL, 15, 14, True),
        (DealStatus.OPEN, StageKind.NEGOTIATION, 15, 14, True),
        (DealStatus.OPEN, StageKind.PROPOSAL, 14, 14, False),  # exactly at the threshold: not beyond it
        (DealStatus.OPEN, StageKind.PROPOSAL, 13, 14, False),
        (DealStatus.OPEN, StageKind.PROPOSAL, 400, None, False),  # a stage without a threshold never rots
        (DealStatus.OPEN, StageKind.NEW, 400, 14, False),  # only proposal and negotiation rot
        (DealStatus.OPEN, StageKind.DISCOVERY, 400, 14, False),
        (DealStatus.STALLED, StageKind.PROPOSAL, 400, 14, False),  # already stalled
        (DealStatus.WON, StageKind.WON, 400, 14, False),
        (DealStatus.LOST, StageKind.LOST, 400, 14, False),
    ],
)
def test_an_open_proposal_or_negotiation_deal_rots_once_idle_beyond_its_threshold(
    status, kind, idle_days, threshold, rots
):
    assert is_rotting(status, kind, NOW - timedelta(days=idle_days), threshold, NOW) is rots


# -- forecast figures ---------------------------------------------------------------------------------------


def test_a_deal_uses_its_own_probability_and_category_else_its_stages():
    assert effective_probability(50, None) == 50
    assert effective_probability(50, 80) == 80
    assert effective_probability(50, 0) == 0
    assert effective_category(ForecastCategory.BEST_CASE, None) is ForecastCategory.BEST_CASE
    assert effective_category(ForecastCategory.BEST_CASE, ForecastCategory.COMMIT) is ForecastCategory.COMMIT


def test_the_weighted_pipeline_rounds_once_half_away_from_zero():
    # 333 × 50 % = 166.5 and 333 × 50 % again: 333.0 once summed (per-deal rounding would give 334).
    assert weighted_pipeline([(333, 50), (333, 50)]) == 333
    assert weighted_pipeline([(1, 50)]) == 1  # 0.5 rounds up
    assert weighted_pipeline([(1, 49)]) == 0
    assert weighted_pipeline([]) == 0
    assert weighted_pipeline([(100_000, 75), (250_000, 10)]) == 100_000


@pytest.mark.parametrize(
    ("code", "valid"), [("EUR", True), ("ILS", True), ("JPY", True), ("eur", False), ("XXX", False)]
)
def test_a_currency_is_an_active_iso_4217_code(code, valid):
    assert valid_currency(code) is valid
