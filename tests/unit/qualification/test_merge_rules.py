"""Merge rules (qualification.rules.merges): who can be merged, which survivor fields are filled, the undo window and
which filled columns an undo gives back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from leadcrm.qualification.rules.merges import (
    FILL_COLUMNS,
    FILL_GROUPS,
    MergeRefusal,
    UndoRefusal,
    columns_to_restore,
    filled_values,
    merge_refusal,
    undo_refusal,
)

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
COLUMNS = (*FILL_COLUMNS, *(c for group in FILL_GROUPS for c in group))


def lead(**values):
    return {"id": uuid.uuid4(), "status": "new", "converted_membership_id": None, **dict.fromkeys(COLUMNS), **values}


def test_a_lead_is_not_merged_into_itself():
    one = lead()
    assert merge_refusal(one, one, either_pseudonymized=False) is MergeRefusal.SAME_LEAD


@pytest.mark.parametrize(
    "merged", [lead(status="converted"), lead(status="customer"), lead(converted_membership_id=uuid.uuid4())]
)
def test_a_converted_lead_is_never_merged_away(merged):
    assert merge_refusal(lead(), merged, either_pseudonymized=False) is MergeRefusal.MERGED_LEAD_CONVERTED


def test_a_converted_survivor_is_fine():
    assert merge_refusal(lead(status="converted"), lead(status="lost"), either_pseudonymized=False) is None


def test_pseudonymized_leads_are_not_merged():
    assert merge_refusal(lead(), lead(), either_pseudonymized=True) is MergeRefusal.PSEUDONYMIZED


def test_only_empty_survivor_fields_are_filled():
    survivor = lead(name="Dana Cohen", email="  ", phone=None)
    merged = lead(name="Dana", email="dana@example.com", phone="+1 555 0100")
    assert filled_values(survivor, merged) == {"email": "dana@example.com", "phone": "+1 555 0100"}


def test_a_follow_up_is_filled_as_a_whole_or_not_at_all():
    at = NOW + timedelta(days=1)
    merged = lead(next_action_at=at, next_action_type="call", next_action_note="ask about kids class")
    assert filled_values(lead(), merged) == {
        "next_action_at": at,
        "next_action_type": "call",
        "next_action_note": "ask about kids class",
    }
    survivor = lead(next_action_at=NOW, next_action_type="email", next_action_note=None)
    assert filled_values(survivor, merged) == {}  # no note borrowed onto another follow-up


def test_a_nurture_continues_on_a_survivor_without_qualification():
    merged = lead(qualification_state="nurturing", reevaluate_at=NOW, nurture_score=20, qualification_criteria={})
    filled = filled_values(lead(qualification_criteria={}), merged)
    assert (filled["qualification_state"], filled["reevaluate_at"], filled["nurture_score"]) == ("nurturing", NOW, 20)
    assert filled_values(lead(qualification_state="qualified"), merged) == {}


def test_the_undo_window_is_seven_days():
    assert undo_refusal(NOW - timedelta(days=7), NOW, undone=False, survivor_moved=False, has_snapshot=True) is None
    late = undo_refusal(NOW - timedelta(days=7, seconds=1), NOW, undone=False, survivor_moved=False, has_snapshot=True)
    assert late is UndoRefusal.WINDOW_PASSED


@pytest.mark.parametrize(
    ("undone", "moved", "snapshot", "expected"),
    [
        (True, False, True, UndoRefusal.ALREADY_UNDONE),
        (False, True, True, UndoRefusal.SURVIVOR_MERGED_SINCE),
        (False, False, False, UndoRefusal.SNAPSHOT_GONE),
    ],
)
def test_undo_refusals(undone, moved, snapshot, expected):
    assert undo_refusal(NOW, NOW, undone=undone, survivor_moved=moved, has_snapshot=snapshot) is expected


def test_an_undo_restores_only_the_filled_columns_nobody_edited_since():
    filled = {"email": "dana@example.com", "trial_date": NOW.isoformat()}
    previous = {"email": None, "trial_date": None}
    current = {"email": "dana.new@example.com", "trial_date": NOW}
    restore = columns_to_restore(filled, previous, current)
    assert (restore.restore, restore.kept) == ({"trial_date": None}, ["email"])
