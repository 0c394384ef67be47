"""Merging a duplicate lead into the survivor staff chose, and undoing it. Pure rules.

- The two leads differ; the merged lead is not converted (spec: "Any non-Converted state → Merged"); the
  survivor may be (a duplicate of an existing member's lead).
- Lead columns: what the survivor lacks is filled from the merged lead, column by column, except for
  groups that only make sense together (the follow-up's when/type/note), which are filled as a whole when
  the survivor has none of the group. What the survivor has is never overwritten.
- Qualification (`qualification_fill`; spec 8: "Duplicate lead during nurture … nurture continues from
  surviving record"): the survivor is the record that goes on, so its own decision stands.
  - A survivor without a decision (never scored, or `scored`) takes the duplicate's decision as a whole:
    state, reason code, when it was taken, the re-evaluation date and the score it was nurtured at. A
    nurtured duplicate's nurture therefore continues on the survivor, due when it was due. A `qualified`
    decision comes over only while BANT is still all met on the survivor's answers after the merge (the
    survivor's own evidence may say otherwise: then the survivor stays undecided for staff to decide).
  - A survivor that is qualified, disqualified or nurturing keeps its decision. When both are nurturing,
    the survivor's nurture continues (its baseline score, its start) but is re-evaluated at the earlier of
    the two dates: neither record's promised look at the person is missed.
  - BANT, criterion by criterion (the spec's four questions are independent, each with its own evidence):
    a criterion the survivor has not answered (absent or `unknown`) takes the duplicate's answer when that
    one is met or not met, as a whole (status, evidence, who recorded it, when). An answer of the
    survivor's is never replaced, and no evidence is ever paired with another record's status.
- The survivor ends with one open follow-up task: when both have one, the merged lead's is cancelled.
- An undo is possible for UNDO_WINDOW after the merge, once. It restores a survivor column the merge filled
  only while it still holds the value the merge put there (a later edit wins and is reported); a group
  (the follow-up, the qualification decision) goes back as a whole or, when any of it was edited since,
  not at all, so an undo never leaves half a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from leadcrm.qualification.rules.qualification import (
    Criterion,
    CriterionStatus,
    QualificationState,
    criteria_satisfied,
)

UNDO_WINDOW = timedelta(days=7)

# Filled one by one when the survivor's is empty (None or blank text).
FILL_COLUMNS = (
    "name",
    "email",
    "phone",
    "locale",
    "note",
    "campaign_id",
    "assigned_to_user_id",
    "trial_date",
    "last_contact_attempt_at",
    "last_contacted_at",
    "first_human_response_at",
    "last_inbound_at",
    "last_outbound_at",
)
# Filled together, from the group's first column being empty on the survivor.
FILL_GROUPS = (("next_action_at", "next_action_type", "next_action_note"),)
# The qualification decision, carried as a whole by `qualification_fill` (reevaluate_at alone when both
# leads are nurtured); BANT answers are merged criterion by criterion into CRITERIA_COLUMN.
QUALIFICATION_DECISION = (
    "qualification_state",
    "qualification_reason",
    "qualification_changed_at",
    "reevaluate_at",
    "nurture_score",
)
CRITERIA_COLUMN = "qualification_criteria"
# Scored but neither qualified, nurtured nor disqualified: a survivor in one of these takes a decision.
UNDECIDED_STATES = frozenset({None, QualificationState.SCORED.value})
# Groups an undo puts back as a whole or not at all.
RESTORE_GROUPS = (*FILL_GROUPS, QUALIFICATION_DECISION)


class MergeRefusal(StrEnum):
    SAME_LEAD = "MERGE_SAME_LEAD"
    MERGED_LEAD_CONVERTED = "MERGED_LEAD_CONVERTED"
    PSEUDONYMIZED = "LEAD_PSEUDONYMIZED"


class UndoRefusal(StrEnum):
    ALREADY_UNDONE = "MERGE_ALREADY_UNDONE"
    WINDOW_PASSED = "MERGE_UNDO_WINDOW_PASSED"
    SURVIVOR_MERGED_SINCE = "SURVIVOR_MERGED_SINCE"
    SNAPSHOT_GONE = "MERGE_SNAPSHOT_GONE"


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, dict):
        return not value
    return False


WON_STATUSES = ("converted", "customer")


def is_won(status: str, converted_membership_id: Any) -> bool:
    """A converted lead or a customer is a member or a buyer: it may survive a merge, never be merged away."""
    return converted_membership_id is not None or status in WON_STATUSES


def merge_refusal(
    survivor: Mapping[str, Any], merged: Mapping[str, Any], *, either_pseudonymized: bool
) -> MergeRefusal | None:
    if survivor["id"] == merged["id"]:
        return MergeRefusal.SAME_LEAD
    if is_won(merged["status"], merged.get("converted_membership_id")):
        return MergeRefusal.MERGED_LEAD_CONVERTED
    if either_pseudonymized:
        return MergeRefusal.PSEUDONYMIZED
    return None


def filled_values(survivor: Mapping[str, Any], merged: Mapping[str, Any]) -> dict[str, Any]:
    """The survivor columns the merge fills, with the merged lead's values."""
    values = {c: merged[c] for c in FILL_COLUMNS if _empty(survivor[c]) and not _empty(merged[c])}
    for group in FILL_GROUPS:
        if _empty(survivor[group[0]]) and not _empty(merged[group[0]]):
            values.update({c: merged[c] for c in group})
    values.update(qualification_fill(survivor, merged))
    return values


_ANSWERED = frozenset({CriterionStatus.MET.value, CriterionStatus.NOT_MET.value})


def _answered(answer: Any) -> bool:
    return isinstance(answer, Mapping) and answer.get("status") in _ANSWERED


def merged_criteria(survivor: Mapping[str, Any] | None, merged: Mapping[str, Any] | None) -> dict[str, Any]:
    """The survivor's BANT answers after the merge: each criterion it has not answered (absent or unknown)
    takes the merged lead's answer, whole, when that one is met or not met."""
    result = dict(survivor or {})
    for criterion in Criterion:
        theirs = (merged or {}).get(criterion.value)
        if not _answered(result.get(criterion.value)) and _answered(theirs):
            result[criterion.value] = theirs
    return result


def qualification_fill(survivor: Mapping[str, Any], merged: Mapping[str, Any]) -> dict[str, Any]:
    """The qualification columns the merge writes on the survivor (see the module docstring)."""
    values: dict[str, Any] = {}
    criteria = merged_criteria(survivor[CRITERIA_COLUMN], merged[CRITERIA_COLUMN])
    if criteria != dict(survivor[CRITERIA_COLUMN] or {}):
        values[CRITERIA_COLUMN] = criteria
    mine, theirs = survivor["qualification_state"], merged["qualification_state"]
    # A never-scored survivor takes whatever the duplicate has (even `scored`: it is the only assessment);
    # a scored one only a decision. A qualification must still hold on the survivor's merged answers.
    if mine in UNDECIDED_STATES and theirs is not None and (mine is None or theirs not in UNDECIDED_STATES):
        if theirs != QualificationState.QUALIFIED.value or criteria_satisfied(criteria):
            values.update({c: merged[c] for c in QUALIFICATION_DECISION})
    elif mine == theirs == QualificationState.NURTURING.value:
        due = _earlier(survivor["reevaluate_at"], merged["reevaluate_at"])
        if due != survivor["reevaluate_at"]:
            values["reevaluate_at"] = due
    return values


def _earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None or b is None:
        return a or b
    return min(a, b)


def undo_refusal(
    merged_at: datetime,
    now: datetime,
    *,
    undone: bool,
    survivor_moved: bool,
    has_snapshot: bool,
) -> UndoRefusal | None:
    if undone:
        return UndoRefusal.ALREADY_UNDONE
    if now - merged_at > UNDO_WINDOW:
        return UndoRefusal.WINDOW_PASSED
    if survivor_moved:
        return UndoRefusal.SURVIVOR_MERGED_SINCE
    if not has_snapshot:
        return UndoRefusal.SNAPSHOT_GONE
    return None


@dataclass(frozen=True)
class ColumnRestore:
    restore: dict[str, Any]  # survivor columns to put back
    kept: list[str]  # columns edited since the merge: the edit stays


def columns_to_restore(
    filled: Mapping[str, Any], previous: Mapping[str, Any], current: Mapping[str, Any]
) -> ColumnRestore:
    """Which of the columns the merge filled go back to the survivor's previous value: those that still hold
    what the merge wrote (compared as JSON text, the way both were stored). The columns of a group
    (RESTORE_GROUPS) go back together or, when any of them was edited since, stay together."""
    restore: dict[str, Any] = {}
    kept: list[str] = []
    grouped = {column: group for group in RESTORE_GROUPS for column in group}
    units: list[list[str]] = []
    for column in filled:
        group = grouped.get(column)
        if group is None:
            units.append([column])
        elif column == next(c for c in group if c in filled):  # the group's first filled column
            units.append([c for c in group if c in filled])
    for unit in units:
        if all(_same(current.get(column), filled[column]) for column in unit):
            restore.update({column: previous.get(column) for column in unit})
        else:
            kept.extend(unit)
    return ColumnRestore(restore=restore, kept=sorted(kept))


def _same(a: Any, b: Any) -> bool:
    return _comparable(a) == _comparable(b)


def _comparable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (dict, list, int, float, bool)):
        return value
    return str(value)
