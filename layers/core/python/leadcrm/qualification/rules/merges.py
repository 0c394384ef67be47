"""Merging a duplicate lead into the survivor staff chose, and undoing it. Pure rules.

- The two leads differ; the merged lead is not converted (spec: "Any non-Converted state → Merged"); the
  survivor may be (a duplicate of an existing member's lead).
- Lead columns: what the survivor lacks is filled from the merged lead, column by column, except for
  groups that only make sense together (the follow-up's when/type/note, the qualification), which are
  filled as a whole when the survivor has none of the group. What the survivor has is never overwritten.
- The survivor ends with one open follow-up task: when both have one, the merged lead's is cancelled.
- An undo is possible for UNDO_WINDOW after the merge, once. It restores a survivor column the merge filled
  only while it still holds the value the merge put there (a later edit wins and is reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

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
FILL_GROUPS = (
    ("next_action_at", "next_action_type", "next_action_note"),
    (
        "qualification_state",
        "qualification_reason",
        "qualification_criteria",
        "qualification_changed_at",
        "reevaluate_at",
        "nurture_score",
    ),
)


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
    return values


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
    what the merge wrote (compared as JSON text, the way both were stored)."""
    restore: dict[str, Any] = {}
    kept: list[str] = []
    for column, written in filled.items():
        if _same(current.get(column), written):
            restore[column] = previous.get(column)
        else:
            kept.append(column)
    return ColumnRestore(restore=restore, kept=sorted(kept))


def _same(a: Any, b: Any) -> bool:
    return _comparable(a) == _comparable(b)


def _comparable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (dict, list, int, float, bool)):
        return value
    return str(value)
