"""Call outcomes (call-outcomes-state-machine.txt, mapped onto our categories in DESIGN.md "Model decisions").

A touch may carry an outcome; the outcome moves the lead. The spec's stages map onto our categories:
attempted → contacted, scheduled → trial_booked, and every resolved stage → lost with the outcome as the
lost reason, except `sale` → customer. Two terminal constraints hold: `sale` / `no_sale` only from
trial_booked, `unresponsive` never from new. A closed or won lead ignores outcomes (it comes back only
through the returning-lead entry points).

Two outcomes the spec's table does not list: `no_answer` (an attempt nobody picked up: the lead has been
tried, so new → contacted, and the unanswered-calls count goes up) and `contacted` (a conversation: new →
contacted). Both leave any later open stage alone, like `contact_attempted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from leadcrm.pipelines.rules.statuses import StageCategory, is_open


class TouchChannel(StrEnum):
    CALL = "call"
    WHATSAPP = "whatsapp"
    EMAIL = "email"
    SMS = "sms"
    MEETING = "meeting"
    OTHER = "other"


class CallOutcome(StrEnum):
    CONTACT_ATTEMPTED = "contact_attempted"
    NO_ANSWER = "no_answer"
    CALLBACK_REQUESTED = "callback_requested"
    APPOINTMENT_SCHEDULED = "appointment_scheduled"
    APPOINTMENT_NO_SHOW = "appointment_no_show"
    APPOINTMENT_CANCEL = "appointment_cancel"
    SALE = "sale"
    NO_SALE = "no_sale"
    REFUSED = "refused"
    WRONG_NUMBER = "wrong_number"
    BAD_NUMBER = "bad_number"
    UNRESPONSIVE = "unresponsive"
    DUPLICATE = "duplicate"
    DNC = "dnc"
    CONTACTED = "contacted"


# Outcomes that only move a new lead on (the lead has been tried); later open stages stay.
_FIRST_TRY = frozenset({CallOutcome.CONTACT_ATTEMPTED, CallOutcome.NO_ANSWER, CallOutcome.CONTACTED})
# Outcomes that move any open lead to a given open category.
_TO_OPEN = {
    CallOutcome.CALLBACK_REQUESTED: StageCategory.CALLBACK,
    CallOutcome.APPOINTMENT_SCHEDULED: StageCategory.TRIAL_BOOKED,
    CallOutcome.APPOINTMENT_NO_SHOW: StageCategory.NO_SHOW,
    CallOutcome.APPOINTMENT_CANCEL: StageCategory.CALLBACK,
}
# Resolved outcomes from any open stage: lost, with the outcome as the reason.
_LOST_FROM_ANY_OPEN = frozenset(
    {CallOutcome.REFUSED, CallOutcome.WRONG_NUMBER, CallOutcome.BAD_NUMBER, CallOutcome.DUPLICATE, CallOutcome.DNC}
)
_ONLY_FROM_TRIAL_BOOKED = frozenset({CallOutcome.SALE, CallOutcome.NO_SALE})

# A person was reached (the lead or whoever answers its number): resets the unanswered-calls count, stamps
# last_contacted_at, and retires the intake call / return call. Attempts and bookkeeping outcomes do not.
HUMAN_CONTACT_OUTCOMES = frozenset(
    {
        CallOutcome.CONTACTED,
        CallOutcome.CALLBACK_REQUESTED,
        CallOutcome.APPOINTMENT_SCHEDULED,
        CallOutcome.APPOINTMENT_CANCEL,
        CallOutcome.SALE,
        CallOutcome.NO_SALE,
        CallOutcome.REFUSED,
        CallOutcome.WRONG_NUMBER,
        CallOutcome.DNC,
    }
)


class OutcomeRefusal(StrEnum):
    REQUIRES_TRIAL_BOOKED = "OUTCOME_REQUIRES_TRIAL_BOOKED"
    NOT_FROM_NEW = "OUTCOME_NOT_FROM_NEW"


class OutcomeRefused(Exception):
    def __init__(self, refusal: OutcomeRefusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal


@dataclass(frozen=True)
class OutcomePlan:
    """What an outcome does to a lead in `status`.

    applied: False when the lead is closed or won (the outcome is logged and ignored). target: the category
    the lead moves to, None when it stays where it is. lost_reason: set when target is lost."""

    applied: bool
    target: StageCategory | None = None
    lost_reason: str | None = None


def plan_outcome(status: StageCategory | str, outcome: CallOutcome | str) -> OutcomePlan:
    """The move an outcome asks for; raises OutcomeRefused on a terminal constraint."""
    status = StageCategory(status)
    outcome = CallOutcome(outcome)
    if not is_open(status):
        return OutcomePlan(applied=False)
    if outcome in _FIRST_TRY:
        return OutcomePlan(applied=True, target=StageCategory.CONTACTED if status is StageCategory.NEW else None)
    if outcome in _TO_OPEN:
        target = _TO_OPEN[outcome]
        return OutcomePlan(applied=True, target=None if target is status else target)
    if outcome in _ONLY_FROM_TRIAL_BOOKED:
        if status is not StageCategory.TRIAL_BOOKED:
            raise OutcomeRefused(OutcomeRefusal.REQUIRES_TRIAL_BOOKED)
        if outcome is CallOutcome.SALE:
            return OutcomePlan(applied=True, target=StageCategory.CUSTOMER)
        return OutcomePlan(applied=True, target=StageCategory.LOST, lost_reason=outcome.value)
    if outcome is CallOutcome.UNRESPONSIVE:
        if status is StageCategory.NEW:
            raise OutcomeRefused(OutcomeRefusal.NOT_FROM_NEW)
        return OutcomePlan(applied=True, target=StageCategory.LOST, lost_reason=outcome.value)
    assert outcome in _LOST_FROM_ANY_OPEN, outcome
    return OutcomePlan(applied=True, target=StageCategory.LOST, lost_reason=outcome.value)


def possible_targets(outcome: CallOutcome | str | None) -> list[StageCategory]:
    """Every category the outcome may move a lead to, whatever its status (what a touch looks up with the
    lead's lock, before it knows the status)."""
    if outcome is None:
        return []
    targets: list[StageCategory] = []
    for status in StageCategory:
        try:
            target = plan_outcome(status, outcome).target
        except OutcomeRefused:
            continue
        if target is not None and target not in targets:
            targets.append(target)
    return targets


def is_human_contact(outcome: CallOutcome | str | None) -> bool:
    return outcome is not None and CallOutcome(outcome) in HUMAN_CONTACT_OUTCOMES


def no_answer_count_after(count: int, outcome: CallOutcome | str | None) -> int:
    """Unanswered calls in a row: a no-answer adds one, a person reached starts again, anything else keeps it."""
    if outcome is not None and CallOutcome(outcome) is CallOutcome.NO_ANSWER:
        return count + 1
    return 0 if is_human_contact(outcome) else count
