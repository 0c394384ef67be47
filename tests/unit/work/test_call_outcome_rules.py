"""Call outcomes (call-outcomes-state-machine.txt as mapped in DESIGN.md): every outcome from every category."""

from __future__ import annotations

import pytest

from leadcrm.pipelines.rules.statuses import OPEN_CATEGORIES, StageCategory
from leadcrm.work.rules.call_outcomes import (
    CallOutcome,
    OutcomePlan,
    OutcomeRefusal,
    OutcomeRefused,
    is_human_contact,
    no_answer_count_after,
    plan_outcome,
)

C = StageCategory
Out = CallOutcome
OPEN = sorted(OPEN_CATEGORIES)
NOT_OPEN = [C.CONVERTED, C.CUSTOMER, C.LOST, C.FROZEN]
LOST_FROM_ANY_OPEN = [Out.REFUSED, Out.WRONG_NUMBER, Out.BAD_NUMBER, Out.DUPLICATE, Out.DNC]


def _expected(status: StageCategory, outcome: CallOutcome) -> OutcomePlan | OutcomeRefusal:
    """The table, written out independently of the implementation."""
    if status in NOT_OPEN:
        return OutcomePlan(applied=False)
    if outcome in (Out.CONTACT_ATTEMPTED, Out.NO_ANSWER, Out.CONTACTED):
        return OutcomePlan(True, C.CONTACTED if status is C.NEW else None)
    to_open = {
        Out.CALLBACK_REQUESTED: C.CALLBACK,
        Out.APPOINTMENT_SCHEDULED: C.TRIAL_BOOKED,
        Out.APPOINTMENT_NO_SHOW: C.NO_SHOW,
        Out.APPOINTMENT_CANCEL: C.CALLBACK,
    }
    if outcome in to_open:
        return OutcomePlan(True, None if to_open[outcome] is status else to_open[outcome])
    if outcome in (Out.SALE, Out.NO_SALE):
        if status is not C.TRIAL_BOOKED:
            return OutcomeRefusal.REQUIRES_TRIAL_BOOKED
        return OutcomePlan(True, C.CUSTOMER) if outcome is Out.SALE else OutcomePlan(True, C.LOST, "no_sale")
    if outcome is Out.UNRESPONSIVE:
        return OutcomeRefusal.NOT_FROM_NEW if status is C.NEW else OutcomePlan(True, C.LOST, "unresponsive")
    assert outcome in LOST_FROM_ANY_OPEN
    return OutcomePlan(True, C.LOST, outcome.value)


@pytest.mark.parametrize("status", list(C))
@pytest.mark.parametrize("outcome", list(Out))
def test_every_outcome_from_every_category_follows_the_table(status, outcome):
    expected = _expected(status, outcome)
    if isinstance(expected, OutcomeRefusal):
        with pytest.raises(OutcomeRefused) as refused:
            plan_outcome(status, outcome)
        assert refused.value.refusal is expected
    else:
        assert plan_outcome(status, outcome) == expected


@pytest.mark.parametrize("status", [s for s in OPEN if s is not C.TRIAL_BOOKED])
@pytest.mark.parametrize("outcome", [Out.SALE, Out.NO_SALE])
def test_sale_and_no_sale_need_a_booked_trial(status, outcome):
    with pytest.raises(OutcomeRefused) as refused:
        plan_outcome(status, outcome)
    assert refused.value.refusal.value == "OUTCOME_REQUIRES_TRIAL_BOOKED"


def test_sale_from_a_booked_trial_makes_a_customer_and_no_sale_a_lost_lead():
    assert plan_outcome("trial_booked", "sale") == OutcomePlan(True, C.CUSTOMER)
    assert plan_outcome("trial_booked", "no_sale") == OutcomePlan(True, C.LOST, "no_sale")


def test_unresponsive_is_never_applied_to_a_new_lead():
    with pytest.raises(OutcomeRefused) as refused:
        plan_outcome("new", "unresponsive")
    assert refused.value.refusal.value == "OUTCOME_NOT_FROM_NEW"


@pytest.mark.parametrize("status", [s for s in OPEN if s is not C.NEW])
def test_unresponsive_from_a_contacted_lead_loses_it(status):
    assert plan_outcome(status, "unresponsive") == OutcomePlan(True, C.LOST, "unresponsive")


@pytest.mark.parametrize("status", OPEN)
@pytest.mark.parametrize("outcome", LOST_FROM_ANY_OPEN)
def test_refusals_and_bad_numbers_lose_the_lead_from_any_open_stage_with_the_outcome_as_reason(status, outcome):
    assert plan_outcome(status, outcome) == OutcomePlan(True, C.LOST, outcome.value)


@pytest.mark.parametrize("status", NOT_OPEN)
@pytest.mark.parametrize("outcome", [Out.SALE, Out.UNRESPONSIVE, Out.DNC, Out.CONTACT_ATTEMPTED])
def test_a_closed_or_won_lead_ignores_outcomes_even_those_with_constraints(status, outcome):
    assert plan_outcome(status, outcome) == OutcomePlan(applied=False)


def test_a_later_attempt_does_not_drag_a_lead_back_to_contacted():
    assert plan_outcome("trial_booked", "contact_attempted") == OutcomePlan(True, None)


def test_human_contact_outcomes():
    assert is_human_contact("contacted") and is_human_contact("callback_requested") and is_human_contact("dnc")
    assert not is_human_contact("no_answer") and not is_human_contact("contact_attempted")
    assert not is_human_contact("bad_number") and not is_human_contact(None)


def test_no_answer_counts_up_a_person_reached_resets_anything_else_keeps():
    assert no_answer_count_after(2, "no_answer") == 3
    assert no_answer_count_after(2, "contacted") == 0
    assert no_answer_count_after(2, "contact_attempted") == 2
    assert no_answer_count_after(2, None) == 2
