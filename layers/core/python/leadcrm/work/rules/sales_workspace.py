"""The Sales workspace's writes as pure rules (issue 26): what a result logs, and what the Board's stage write
needs.

A result (`POST …/sales-workspace/leads/{leadId}/results`) is one contact result on the lead's Sales sheet:
- with an outcome or a note it is a touch (`work.touches.log_touch`: the outcome's move, the stamps, the
  follow-up replaced, cleared or kept);
- without either it logs no contact (no stamp, no call_logged): only its follow-up change and its move;
- a stage move (`stageId`) comes after the touch, under the rules of every move.
A result that asks for nothing is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.work.rules.call_outcomes import CallOutcome
from leadcrm.work.rules.follow_ups import TouchFollowUpAction


class ResultRefusal(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ResultPlan:
    logs_touch: bool  # a contact was made or tried: the touch use case runs
    follow_up_action: TouchFollowUpAction
    moves_stage: bool
    touch_trial_date: datetime | None  # the appointment the outcome booked (the touch's trialDate)


def plan_result(
    *,
    outcome: CallOutcome | None,
    note: str | None,
    follow_up_action: TouchFollowUpAction,
    moves_stage: bool,
    trial_date: datetime | None,
) -> ResultPlan:
    """What a result does; ResultRefusal RESULT_EMPTY when it asks for nothing."""
    logs_touch = outcome is not None or bool(note)
    if not logs_touch and follow_up_action is TouchFollowUpAction.KEEP and not moves_stage:
        raise ResultRefusal("RESULT_EMPTY", "Give an outcome, a note, a follow-up change or a stage.")
    booked = outcome is CallOutcome.APPOINTMENT_SCHEDULED
    return ResultPlan(
        logs_touch=logs_touch,
        follow_up_action=follow_up_action,
        moves_stage=moves_stage,
        touch_trial_date=trial_date if booked else None,
    )


def stage_write_refusal(
    *, target: StageCategory, current_stage_is_target: bool, trial_date: datetime | None
) -> ResultRefusal | None:
    """The Board's rule beyond every move's: entering a trial_booked stage says when the trial is
    (TRIAL_DATE_REQUIRED). A converted stage is refused by the move itself (CONVERT_REQUIRED: the Convert
    dialog owns it). Staying on the stage asks for nothing."""
    if current_stage_is_target:
        return None
    if target is StageCategory.TRIAL_BOOKED and trial_date is None:
        return ResultRefusal("TRIAL_DATE_REQUIRED", "A move to a trial-booked stage needs the trial's date.")
    return None
