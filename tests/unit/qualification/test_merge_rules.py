"""Merge rules (qualification.rules.merges): who can be merged, which survivor fields are filled, how a duplicate's
qualification (decision, nurture, BANT) reaches the survivor, the undo window and which filled columns an undo gives
back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.qualification.rules.merges import (
    CRITERIA_COLUMN,
    FILL_COLUMNS,
    FILL_GROUPS,
    QUALIFICATION_DECISION,
    MergeRefusal,
    UndoRefusal,
    columns_to_restore,
    filled_values,
    merge_refusal,
    undo_refusal,
)

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
COLUMNS = (*FILL_COLUMNS, *(c for group in FILL_GROUPS for c in group), *QUALIFICATION_DECISION)


def lead(**values):
    return {
        "id": uuid.uuid4(),
        "status": "new",
        "converted_membership_id": None,
        **dict.fromkeys(COLUMNS),
        CRITERIA_COLUMN: {},
        **values,
    }


def answer(status: str, evidence: str | None = None) -> dict:
    return {"status": status, "evidence": evidence, "recordedBy": None, "recordedAt": NOW.isoformat()}


ALL_MET = {c: answer("met", f"{c} confirmed") for c in ("budget", "authority", "need", "timeline")}


def nurtured(days: int, score: int = 20, **values) -> dict:
    nurture = {
        "qualification_state": "nurturing",
        "qualification_changed_at": NOW - timedelta(days=1),
        "reevaluate_at": NOW + timedelta(days=days),
        "nurture_score": score,
    }
    return lead(**{**nurture, **values})


def decision(row: dict) -> dict:
    return {c: row[c] for c in QUALIFICATION_DECISION}


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


@pytest.mark.parametrize("survivor_state", [None, "scored"])
def test_a_nurture_carries_over_with_its_reevaluation_date(survivor_state):
    """Spec 8: "Duplicate lead during nurture … nurture continues from surviving record"."""
    duplicate = nurtured(days=3)
    filled = filled_values(lead(qualification_state=survivor_state), duplicate)
    assert {c: filled[c] for c in QUALIFICATION_DECISION} == decision(duplicate)


@pytest.mark.parametrize("survivor_state", ["qualified", "disqualified"])
@pytest.mark.parametrize("duplicate_state", ["scored", "nurturing", "qualified", "disqualified"])
def test_the_survivors_own_decision_is_not_overwritten(survivor_state, duplicate_state):
    survivor = lead(qualification_state=survivor_state, qualification_reason="no_budget", qualification_changed_at=NOW)
    duplicate = nurtured(days=3, qualification_state=duplicate_state, **{CRITERIA_COLUMN: ALL_MET})
    assert set(filled_values(survivor, duplicate)) & set(QUALIFICATION_DECISION) == set()


def test_when_both_are_nurtured_the_survivors_nurture_continues_due_at_the_earlier_date():
    survivor, duplicate = nurtured(days=20, score=35), nurtured(days=3, score=20)
    filled = filled_values(survivor, duplicate)
    assert set(filled) & set(QUALIFICATION_DECISION) == {"reevaluate_at"}
    assert filled["reevaluate_at"] == duplicate["reevaluate_at"]


def test_when_both_are_nurtured_and_the_survivor_is_due_first_nothing_changes():
    assert filled_values(nurtured(days=3), nurtured(days=20)) == {}


@pytest.mark.parametrize("duplicate_state", ["disqualified", "qualified"])
def test_a_duplicates_decision_reaches_an_undecided_survivor(duplicate_state):
    duplicate = lead(
        qualification_state=duplicate_state, qualification_reason="no_need", qualification_changed_at=NOW,
        **{CRITERIA_COLUMN: ALL_MET},
    )  # fmt: skip
    filled = filled_values(lead(qualification_state="scored"), duplicate)
    assert {c: filled[c] for c in QUALIFICATION_DECISION} == decision(duplicate)


def test_a_duplicates_qualification_does_not_come_over_against_the_survivors_own_bant():
    survivor = lead(qualification_state="scored", **{CRITERIA_COLUMN: {"budget": answer("not_met", "no money")}})
    duplicate = lead(qualification_state="qualified", qualification_changed_at=NOW, **{CRITERIA_COLUMN: ALL_MET})
    filled = filled_values(survivor, duplicate)
    assert "qualification_state" not in filled
    assert filled[CRITERIA_COLUMN]["budget"] == answer("not_met", "no money")


def test_a_scored_duplicate_does_not_change_a_scored_survivor():
    survivor = lead(qualification_state="scored", qualification_changed_at=NOW)
    assert filled_values(survivor, lead(qualification_state="scored", qualification_changed_at=NOW)) == {}


def test_bant_with_evidence_reaches_a_survivor_without():
    filled = filled_values(lead(qualification_state="scored"), lead(**{CRITERIA_COLUMN: ALL_MET}))
    assert filled[CRITERIA_COLUMN] == ALL_MET


def test_a_survivor_with_bant_keeps_its_own_and_takes_only_the_criteria_it_never_answered():
    mine = {"budget": answer("not_met", "student"), "need": answer("unknown")}
    theirs = {
        "budget": answer("met", "approved"),
        "need": answer("met", "wants evening classes"),
        "timeline": answer("unknown"),
        "authority": answer("not_met", "asks a parent"),
    }
    filled = filled_values(lead(**{CRITERIA_COLUMN: mine}), lead(**{CRITERIA_COLUMN: theirs}))
    assert filled[CRITERIA_COLUMN] == {
        "budget": mine["budget"],  # answered: stands
        "need": theirs["need"],  # unknown is no answer: the duplicate's, with its evidence
        "authority": theirs["authority"],
    }  # the duplicate's own unknown brings nothing


def test_a_survivor_whose_bant_answers_every_criterion_takes_none():
    assert CRITERIA_COLUMN not in filled_values(lead(**{CRITERIA_COLUMN: ALL_MET}), lead(**{CRITERIA_COLUMN: {
        "budget": answer("not_met", "no money")}}))  # fmt: skip


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


def test_an_undo_puts_the_qualification_decision_back_as_a_whole_or_not_at_all():
    previous = {"qualification_state": "scored", "reevaluate_at": None, "nurture_score": None}
    filled = {"qualification_state": "nurturing", "reevaluate_at": NOW.isoformat(), "nurture_score": 20}
    reevaluated_since = {"qualification_state": "nurturing", "reevaluate_at": NOW + timedelta(days=30),
                         "nurture_score": 20}  # fmt: skip
    restore = columns_to_restore(filled, previous, reevaluated_since)
    assert (restore.restore, restore.kept) == ({}, ["nurture_score", "qualification_state", "reevaluate_at"])
    untouched = {**reevaluated_since, "reevaluate_at": NOW}
    assert columns_to_restore(filled, previous, untouched).restore == previous


_STATES = st.sampled_from([None, "scored", "nurturing", "qualified", "disqualified"])
_ANSWER = st.one_of(st.none(), st.sampled_from(["met", "not_met", "unknown"]))


@st.composite
def _qualification(draw) -> dict:
    state = draw(_STATES)
    criteria = {}
    for criterion in ("budget", "authority", "need", "timeline"):
        status = draw(_ANSWER)
        if status is not None:
            criteria[criterion] = answer(status, f"{criterion} evidence" if status != "unknown" else None)
    days = draw(st.integers(min_value=-3, max_value=30))
    return lead(
        qualification_state=state,
        qualification_reason="no_budget" if state == "disqualified" else None,
        qualification_changed_at=NOW - timedelta(days=draw(st.integers(0, 90))) if state else None,
        reevaluate_at=NOW + timedelta(days=days) if state == "nurturing" else None,
        nurture_score=draw(st.integers(0, 100)) if state == "nurturing" else None,
        **{CRITERIA_COLUMN: criteria},
    )


def _as_stored(values: dict) -> dict:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()}


@settings(max_examples=60, deadline=None)
@given(survivor=_qualification(), duplicate=_qualification())
def test_filling_then_restoring_gives_the_survivor_back_exactly(survivor, duplicate):
    filled = filled_values(survivor, duplicate)
    merged = {**survivor, **filled}
    restore = columns_to_restore(_as_stored(filled), _as_stored({c: survivor[c] for c in filled}), merged)
    assert restore.kept == []
    assert _as_stored({**merged, **restore.restore}) == _as_stored(survivor)
