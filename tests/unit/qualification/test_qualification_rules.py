"""The qualification state machine (spec section 4, lead state table), pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leadcrm.qualification.rules.qualification import (
    Criterion,
    CriterionStatus,
    DisqualifyReason,
    QualificationAction,
    QualificationFacts,
    QualificationRefused,
    QualificationState,
    Refusal,
    criteria_satisfied,
    plan_transition,
    reevaluate,
    updated_criteria,
)

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
MET = {c.value: {"status": "met", "evidence": "said so"} for c in Criterion}
S = QualificationState
A = QualificationAction


def facts(state: S | None = S.SCORED, score: int | None = 70, threshold: int | None = 60, criteria=None, **kw):
    return QualificationFacts(
        state=state, score=score, threshold=threshold, criteria=MET if criteria is None else criteria, **kw
    )


def refusal(f: QualificationFacts, action: A, **kw) -> Refusal:
    with pytest.raises(QualificationRefused) as refused:
        plan_transition(f, action, now=NOW, **kw)
    return refused.value.refusal


@pytest.mark.parametrize(
    ("state", "action", "to"),
    [
        (S.SCORED, A.QUALIFY, S.QUALIFIED),
        (S.SCORED, A.NURTURE, S.NURTURING),
        (S.SCORED, A.DISQUALIFY, S.DISQUALIFIED),
        (S.NURTURING, A.DISQUALIFY, S.DISQUALIFIED),
        (S.DISQUALIFIED, A.REQUALIFY, S.QUALIFIED),
    ],
)
def test_the_allowed_transitions(state, action, to):
    reason = DisqualifyReason.NOT_A_FIT if action is A.DISQUALIFY else None
    assert plan_transition(facts(state), action, now=NOW, reason=reason).to_state is to


@pytest.mark.parametrize(
    ("state", "action"),
    [
        (S.QUALIFIED, A.QUALIFY),
        (S.QUALIFIED, A.NURTURE),
        (S.QUALIFIED, A.DISQUALIFY),
        (S.NURTURING, A.QUALIFY),  # nurturing goes back to scored first (re-evaluation)
        (S.NURTURING, A.NURTURE),
        (S.DISQUALIFIED, A.QUALIFY),  # a disqualified lead is requalified, a new qualification event
        (S.DISQUALIFIED, A.NURTURE),
        (S.SCORED, A.REQUALIFY),
        (S.QUALIFIED, A.REQUALIFY),
    ],
)
def test_every_other_transition_is_refused(state, action):
    reason = DisqualifyReason.OTHER if action is A.DISQUALIFY else None
    assert refusal(facts(state), action, reason=reason) is Refusal.TRANSITION_NOT_ALLOWED


@pytest.mark.parametrize("action", list(A))
def test_nothing_happens_before_a_lead_is_scored(action):
    assert refusal(facts(None), action, reason=DisqualifyReason.SPAM) is Refusal.NOT_SCORED


def test_disqualifying_without_a_reason_code_is_refused_whatever_the_state():
    assert refusal(facts(S.SCORED), A.DISQUALIFY) is Refusal.REASON_REQUIRED
    assert refusal(facts(S.QUALIFIED), A.DISQUALIFY) is Refusal.REASON_REQUIRED


def test_the_reason_is_kept_only_on_a_disqualification():
    assert (
        plan_transition(facts(), A.DISQUALIFY, now=NOW, reason=DisqualifyReason.NO_BUDGET).reason
        is DisqualifyReason.NO_BUDGET
    )
    assert plan_transition(facts(), A.QUALIFY, now=NOW, reason=DisqualifyReason.NO_BUDGET).reason is None


@pytest.mark.parametrize(("score", "threshold"), [(59, 60), (None, 60), (70, None)])
def test_qualifying_needs_a_score_at_the_threshold(score, threshold):
    assert refusal(facts(score=score, threshold=threshold), A.QUALIFY) is Refusal.BELOW_THRESHOLD


def test_a_score_exactly_at_the_threshold_qualifies():
    assert plan_transition(facts(score=60, threshold=60), A.QUALIFY, now=NOW).to_state is S.QUALIFIED


def test_qualifying_needs_every_bant_criterion_met():
    partial = {**MET, "authority": {"status": "unknown"}}
    assert refusal(facts(criteria=partial), A.QUALIFY) is Refusal.CRITERIA_NOT_MET
    assert refusal(facts(criteria={}), A.QUALIFY) is Refusal.CRITERIA_NOT_MET


def test_requalifying_needs_bant_but_not_the_threshold():
    assert plan_transition(facts(S.DISQUALIFIED, score=10), A.REQUALIFY, now=NOW).to_state is S.QUALIFIED
    assert refusal(facts(S.DISQUALIFIED, criteria={}), A.REQUALIFY) is Refusal.CRITERIA_NOT_MET


def test_nurturing_schedules_the_reevaluation_and_remembers_the_score():
    planned = plan_transition(facts(score=40, nurture_days=14), A.NURTURE, now=NOW)
    assert (planned.reevaluate_at, planned.nurture_score) == (NOW + timedelta(days=14), 40)
    assert plan_transition(facts(), A.NURTURE, now=NOW, nurture_days=3).reevaluate_at == NOW + timedelta(days=3)


def test_criteria_satisfied_reads_only_the_four_statuses():
    assert criteria_satisfied(MET)
    assert not criteria_satisfied({**MET, "need": {"status": "not_met"}})
    assert not criteria_satisfied({"budget": MET["budget"]})


def test_a_criterion_marked_met_needs_evidence():
    for evidence in (None, "", "   "):
        with pytest.raises(QualificationRefused) as refused:
            updated_criteria({}, {Criterion.BUDGET: (CriterionStatus.MET, evidence)}, actor=None, at="now")
        assert refused.value.refusal is Refusal.EVIDENCE_REQUIRED


def test_updating_some_criteria_keeps_the_others():
    current = {"need": {"status": "met", "evidence": "pain"}}
    updated = updated_criteria(current, {Criterion.BUDGET: (CriterionStatus.NOT_MET, None)}, actor="u1", at="t")
    assert updated == {
        "need": {"status": "met", "evidence": "pain"},
        "budget": {"status": "not_met", "evidence": None, "recordedBy": "u1", "recordedAt": "t"},
    }


@pytest.mark.parametrize(
    ("score", "threshold", "nurture_score", "back"),
    [
        (60, 60, 70, True),  # meets the threshold
        (45, 60, 40, True),  # improved since nurture
        (40, 60, 40, False),  # same score
        (30, 60, 40, False),  # worse
        (None, 60, 40, False),  # no score (no model any more)
        (10, None, None, True),  # nurtured without a score, scored now
    ],
)
def test_reevaluation_returns_an_improved_lead_to_scored(score, threshold, nurture_score, back):
    outcome = reevaluate(score, threshold, nurture_score, now=NOW, nurture_days=7)
    assert outcome.back_to_scored is back
    assert outcome.next_reevaluate_at == (None if back else NOW + timedelta(days=7))
