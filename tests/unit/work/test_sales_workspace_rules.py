"""The Sales workspace's pure rules (issue 26): what a result logs, what the Board's stage write needs, the
queue's needs-reply view, and when a version is stale."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leadcrm.leads.versions import is_stale
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.work.rules.attention import QueueView, QueueViewConflict, Reason, reason_of_view
from leadcrm.work.rules.call_outcomes import CallOutcome
from leadcrm.work.rules.follow_ups import TouchFollowUpAction
from leadcrm.work.rules.sales_workspace import ResultRefusal, plan_result, stage_write_refusal

WHEN = datetime(2030, 3, 1, 10, tzinfo=UTC)


def _plan(**given_fields):
    fields = {
        "outcome": None,
        "note": None,
        "follow_up_action": TouchFollowUpAction.KEEP,
        "moves_stage": False,
        "trial_date": None,
    }
    return plan_result(**{**fields, **given_fields})


def test_a_result_with_an_outcome_logs_a_touch():
    assert _plan(outcome=CallOutcome.NO_ANSWER).logs_touch


def test_a_result_with_only_a_note_logs_a_touch():
    assert _plan(note="rang").logs_touch


def test_a_result_with_only_a_follow_up_logs_no_touch():
    plan = _plan(follow_up_action=TouchFollowUpAction.REPLACE)
    assert not plan.logs_touch
    assert plan.follow_up_action is TouchFollowUpAction.REPLACE


def test_a_result_that_asks_for_nothing_is_refused():
    with pytest.raises(ResultRefusal) as refused:
        _plan()
    assert refused.value.code == "RESULT_EMPTY"


def test_the_trial_date_goes_to_the_touch_only_with_a_booking():
    assert _plan(outcome=CallOutcome.APPOINTMENT_SCHEDULED, trial_date=WHEN).touch_trial_date == WHEN
    assert _plan(outcome=CallOutcome.NO_ANSWER, moves_stage=True, trial_date=WHEN).touch_trial_date is None


def test_entering_trial_booked_needs_a_trial_date():
    refusal = stage_write_refusal(target=StageCategory.TRIAL_BOOKED, current_stage_is_target=False, trial_date=None)
    assert refusal is not None and refusal.code == "TRIAL_DATE_REQUIRED"
    assert (
        stage_write_refusal(target=StageCategory.TRIAL_BOOKED, current_stage_is_target=False, trial_date=WHEN) is None
    )


def test_staying_on_a_trial_booked_stage_asks_for_nothing():
    assert stage_write_refusal(target=StageCategory.TRIAL_BOOKED, current_stage_is_target=True, trial_date=None) is None


@pytest.mark.parametrize("category", [c for c in StageCategory if c is not StageCategory.TRIAL_BOOKED])
def test_other_stages_need_no_trial_date(category):
    assert stage_write_refusal(target=category, current_stage_is_target=False, trial_date=None) is None


def test_the_needs_reply_view_is_the_inbound_unanswered_reason():
    assert reason_of_view(QueueView.NEEDS_REPLY, None) is Reason.INBOUND_UNANSWERED
    assert reason_of_view(QueueView.NEEDS_REPLY, Reason.INBOUND_UNANSWERED) is Reason.INBOUND_UNANSWERED


def test_no_view_keeps_the_reason():
    assert reason_of_view(None, Reason.UNASSIGNED) is Reason.UNASSIGNED


def test_a_view_with_another_reason_conflicts():
    with pytest.raises(QueueViewConflict):
        reason_of_view(QueueView.NEEDS_REPLY, Reason.UNASSIGNED)


@given(st.integers(min_value=1, max_value=2**31 - 1), st.integers(min_value=1, max_value=2**31 - 1))
def test_a_version_is_stale_exactly_when_it_differs(current, expected):
    assert is_stale(current, expected) is (current != expected)


def test_no_version_is_never_stale():
    assert not is_stale(7, None)
