"""Qualification: the second dimension beside the pipeline stage (spec section 1 and the lead state table).

A lead can be `contacted` in its pipeline and `nurturing` here. States and who moves them:

    (none) ──score──▶ scored ──qualify──▶ qualified          (score ≥ threshold, BANT satisfied)
                      scored ──nurture──▶ nurturing          (re-evaluation scheduled)
                   nurturing ──reevaluate──▶ scored          (the job: score improved or ≥ threshold)
          scored | nurturing ──disqualify──▶ disqualified    (a reason code is mandatory)
                disqualified ──requalify──▶ qualified        (new information: BANT satisfied again)

A lead with no state was captured (and perhaps enriched) but never scored. Converted and Merged are not
states here: conversion lives on the pipeline (converted_membership_id) and a merged lead is a tombstone.
All of this is pure; qualification.qualification reads the lead under its lock and writes what is decided here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any


class QualificationState(StrEnum):
    SCORED = "scored"
    QUALIFIED = "qualified"
    NURTURING = "nurturing"
    DISQUALIFIED = "disqualified"


class QualificationAction(StrEnum):
    QUALIFY = "qualify"
    NURTURE = "nurture"
    DISQUALIFY = "disqualify"
    REQUALIFY = "requalify"


class DisqualifyReason(StrEnum):
    """The reason codes a disqualification must carry (free text goes in the note)."""

    NO_BUDGET = "no_budget"
    NO_AUTHORITY = "no_authority"
    NO_NEED = "no_need"
    NO_TIMELINE = "no_timeline"
    NOT_A_FIT = "not_a_fit"
    COMPETITOR = "competitor"
    UNREACHABLE = "unreachable"
    SPAM = "spam"
    OTHER = "other"


class Criterion(StrEnum):
    BUDGET = "budget"
    AUTHORITY = "authority"
    NEED = "need"
    TIMELINE = "timeline"


class CriterionStatus(StrEnum):
    MET = "met"
    NOT_MET = "not_met"
    UNKNOWN = "unknown"


class Refusal(StrEnum):
    """Why a transition is refused; the service maps each onto a 4xx code."""

    NOT_SCORED = "NOT_SCORED"  # nothing to qualify, nurture or disqualify before a score
    TRANSITION_NOT_ALLOWED = "QUALIFICATION_TRANSITION_NOT_ALLOWED"
    BELOW_THRESHOLD = "SCORE_BELOW_THRESHOLD"
    CRITERIA_NOT_MET = "QUALIFICATION_CRITERIA_NOT_MET"
    REASON_REQUIRED = "DISQUALIFY_REASON_REQUIRED"
    EVIDENCE_REQUIRED = "EVIDENCE_REQUIRED"


class QualificationRefused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal


# Which action may start from which state (None: never scored).
_ALLOWED_FROM: dict[QualificationAction, frozenset[QualificationState]] = {
    QualificationAction.QUALIFY: frozenset({QualificationState.SCORED}),
    QualificationAction.NURTURE: frozenset({QualificationState.SCORED}),
    QualificationAction.DISQUALIFY: frozenset({QualificationState.SCORED, QualificationState.NURTURING}),
    QualificationAction.REQUALIFY: frozenset({QualificationState.DISQUALIFIED}),
}

_TARGET: dict[QualificationAction, QualificationState] = {
    QualificationAction.QUALIFY: QualificationState.QUALIFIED,
    QualificationAction.NURTURE: QualificationState.NURTURING,
    QualificationAction.DISQUALIFY: QualificationState.DISQUALIFIED,
    QualificationAction.REQUALIFY: QualificationState.QUALIFIED,
}


@dataclass(frozen=True)
class QualificationFacts:
    """The lead as the rules see it: its state, its score and the threshold of the model in force."""

    state: QualificationState | None
    score: int | None
    threshold: int | None
    criteria: dict[str, Any]
    nurture_days: int | None = None


@dataclass(frozen=True)
class Transition:
    from_state: QualificationState | None
    to_state: QualificationState
    reason: DisqualifyReason | None
    reevaluate_at: datetime | None
    nurture_score: int | None


def criteria_satisfied(criteria: dict[str, Any]) -> bool:
    """BANT is confirmed when each of budget, authority, need and timeline is met (with its evidence)."""
    return all((criteria.get(c.value) or {}).get("status") == CriterionStatus.MET.value for c in Criterion)


def plan_transition(
    facts: QualificationFacts,
    action: QualificationAction,
    *,
    now: datetime,
    reason: DisqualifyReason | None = None,
    nurture_days: int | None = None,
) -> Transition:
    """The transition `action` makes from `facts`, or QualificationRefused.

    - every action needs a scored lead (a state); the action must start from one of its states;
    - qualify: the score meets the model's threshold and BANT is satisfied ("no duplicates unresolved" is
      the service's check, it needs the database);
    - requalify: BANT is satisfied again (new information), whatever the score;
    - nurture: re-evaluation after `nurture_days` (the request's, else the model's);
    - disqualify: a reason code.
    """
    if facts.state is None:
        raise QualificationRefused(Refusal.NOT_SCORED)
    if action is QualificationAction.DISQUALIFY and reason is None:
        raise QualificationRefused(Refusal.REASON_REQUIRED)
    if facts.state not in _ALLOWED_FROM[action]:
        raise QualificationRefused(Refusal.TRANSITION_NOT_ALLOWED)
    if action is QualificationAction.QUALIFY:
        if facts.score is None or facts.threshold is None or facts.score < facts.threshold:
            raise QualificationRefused(Refusal.BELOW_THRESHOLD)
        if not criteria_satisfied(facts.criteria):
            raise QualificationRefused(Refusal.CRITERIA_NOT_MET)
    if action is QualificationAction.REQUALIFY and not criteria_satisfied(facts.criteria):
        raise QualificationRefused(Refusal.CRITERIA_NOT_MET)
    reevaluate_at = None
    nurture_score = None
    if action is QualificationAction.NURTURE:
        days = nurture_days or facts.nurture_days or DEFAULT_NURTURE_DAYS
        reevaluate_at = now + timedelta(days=days)
        nurture_score = facts.score
    return Transition(
        from_state=facts.state,
        to_state=_TARGET[action],
        reason=reason if action is QualificationAction.DISQUALIFY else None,
        reevaluate_at=reevaluate_at,
        nurture_score=nurture_score,
    )


DEFAULT_NURTURE_DAYS = 30


@dataclass(frozen=True)
class Reevaluation:
    back_to_scored: bool
    next_reevaluate_at: datetime | None


def reevaluate(
    score: int | None, threshold: int | None, nurture_score: int | None, *, now: datetime, nurture_days: int
) -> Reevaluation:
    """A nurtured lead due for re-evaluation (spec: Nurturing → Scored when engagement or score improves,
    re-evaluated against the current model): back to scored when its current score meets the threshold or
    beats the score it had when it was put into nurture; otherwise it stays and is looked at again later."""
    improved = score is not None and (
        (threshold is not None and score >= threshold) or (nurture_score is None or score > nurture_score)
    )
    if improved:
        return Reevaluation(back_to_scored=True, next_reevaluate_at=None)
    return Reevaluation(back_to_scored=False, next_reevaluate_at=now + timedelta(days=nurture_days))


def updated_criteria(
    current: dict[str, Any], changes: dict[Criterion, tuple[CriterionStatus, str | None]], *, actor: str | None, at: str
) -> dict[str, Any]:
    """The BANT answers after `changes`: each criterion carries its status and the evidence for it. A
    criterion marked met needs evidence (EVIDENCE_REQUIRED); criteria not named keep their answer."""
    result = dict(current)
    for criterion, (status, evidence) in changes.items():
        if status is CriterionStatus.MET and not (evidence and evidence.strip()):
            raise QualificationRefused(Refusal.EVIDENCE_REQUIRED)
        result[criterion.value] = {"status": status.value, "evidence": evidence, "recordedBy": actor, "recordedAt": at}
    return result
