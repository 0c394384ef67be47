"""A merge keeps the duplicate's qualification (spec 8: "Duplicate lead during nurture … nurture continues from
surviving record"; qualification.rules.merges): a nurture carries over with its re-evaluation date, the survivor's
own decision stands (both nurtured: the earlier date), BANT answers with their evidence reach a survivor that has
none, criterion by criterion, and an undo gives both leads their qualification back exactly."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leadcrm.qualification.qualification import run_nurture_reevaluation
from tests.support.erase_helpers import outbox_rows
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import activities, lead_row, set_lead_columns
from tests.support.qualification_helpers import (
    ALL_MET,
    create_model,
    enrich,
    lead_exists,
    merge,
    new_lead,
    put_criteria,
    qualification,
    transition,
    undo,
)

# companySize ≥ 50 scores 50, the threshold; a small company scores 0.
RULES = [{"kind": "field", "field": "companySize", "operator": "gte", "value": 50, "weight": 50}]

# The qualification row of a lead: what a merge and its undo must keep or give back.
QUALIFICATION_COLUMNS = (
    "qualification_state",
    "qualification_reason",
    "qualification_criteria",
    "qualification_changed_at",
    "reevaluate_at",
    "nurture_score",
    "score",
    "score_model_version",
    "scored_at",
)


@pytest.fixture
def owner():
    caller = make_caller(role="owner")
    assert create_model(caller, RULES, threshold=50, nurtureDays=14).status == 201
    return caller


@pytest.fixture
def coach(owner):
    return make_caller(role="coach", organization=owner.organization)


def _scored_lead(caller, name: str, company_size: int) -> str:
    lead = new_lead(caller, name=name)
    assert enrich(caller, lead["id"], "companySize", company_size).status == 201
    return lead["id"]


def _nurtured_lead(caller, name: str, days: int, company_size: int = 10) -> str:
    lead_id = _scored_lead(caller, name, company_size)
    response = transition(caller, lead_id, "nurture", {"nurtureDays": days})
    assert response.status == 200, response.body
    return lead_id


def _qualification_row(lead_id: Any) -> dict[str, Any]:
    row = lead_row(lead_id)
    return {c: row[c] for c in QUALIFICATION_COLUMNS}


def _merged(caller, survivor_id: str, duplicate_id: str) -> str:
    response = merge(caller, survivor_id, duplicate_id)
    assert response.status == 200, response.body
    return response.data["mergeId"]


def test_a_nurture_carries_over_with_its_reevaluation_date(coach):
    duplicate = _nurtured_lead(coach, "Dana Nurtured", days=3)
    before = lead_row(duplicate)
    survivor = _scored_lead(coach, "Dana Cohen", 100)

    _merged(coach, survivor, duplicate)

    row = lead_row(survivor)
    assert (row["qualification_state"], row["reevaluate_at"], row["nurture_score"]) == (
        "nurturing",
        before["reevaluate_at"],
        before["nurture_score"],
    )
    assert row["qualification_changed_at"] == before["qualification_changed_at"]  # the nurture began then


@pytest.mark.parametrize("decision", ["qualify", "disqualify"])
def test_the_survivors_own_decision_is_not_overwritten(coach, decision):
    duplicate = _nurtured_lead(coach, "Dana Nurtured", days=3)
    survivor = _scored_lead(coach, "Dana Cohen", 100)
    put_criteria(coach, survivor, ALL_MET)
    body = {"reasonCode": "no_budget"} if decision == "disqualify" else {}
    assert transition(coach, survivor, decision, body).status == 200
    before = _qualification_row(survivor)

    _merged(coach, survivor, duplicate)

    after = _qualification_row(survivor)
    assert {c: after[c] for c in QUALIFICATION_COLUMNS[:6]} == {c: before[c] for c in QUALIFICATION_COLUMNS[:6]}


def test_when_both_are_nurtured_the_survivors_nurture_is_due_at_the_earlier_date(coach):
    duplicate = _nurtured_lead(coach, "Dana Nurtured", days=3)
    due = lead_row(duplicate)["reevaluate_at"]
    survivor = _nurtured_lead(coach, "Dana Cohen", days=20)
    own = lead_row(survivor)

    _merged(coach, survivor, duplicate)

    row = lead_row(survivor)
    assert row["reevaluate_at"] == due < own["reevaluate_at"]
    assert (row["qualification_changed_at"], row["nurture_score"]) == (
        own["qualification_changed_at"],
        own["nurture_score"],
    )


def test_bant_with_evidence_reaches_a_survivor_without(coach):
    duplicate = _scored_lead(coach, "Dana Nurtured", 10)
    put_criteria(coach, duplicate, ALL_MET)
    answers = lead_row(duplicate)["qualification_criteria"]
    survivor = _scored_lead(coach, "Dana Cohen", 100)

    _merged(coach, survivor, duplicate)

    assert lead_row(survivor)["qualification_criteria"] == answers
    criteria = qualification(coach, survivor).data["criteria"]
    assert criteria["budget"]["evidence"] == "budget confirmed on the call"


def test_a_survivor_with_bant_keeps_its_own(coach):
    duplicate = _scored_lead(coach, "Dana Nurtured", 10)
    put_criteria(coach, duplicate, ALL_MET)
    theirs = lead_row(duplicate)["qualification_criteria"]
    survivor = _scored_lead(coach, "Dana Cohen", 100)
    put_criteria(coach, survivor, {"budget": {"status": "not_met", "evidence": "a student, no budget"}})
    mine = lead_row(survivor)["qualification_criteria"]

    _merged(coach, survivor, duplicate)

    criteria = lead_row(survivor)["qualification_criteria"]
    assert criteria["budget"] == mine["budget"]
    assert {c: criteria[c] for c in ("authority", "need", "timeline")} == {
        c: theirs[c] for c in ("authority", "need", "timeline")
    }


def test_undo_restores_both_leads_qualification_state_and_bant_exactly(coach):
    duplicate = _nurtured_lead(coach, "Dana Nurtured", days=3)
    put_criteria(coach, duplicate, ALL_MET)
    survivor = _scored_lead(coach, "Dana Cohen", 100)
    put_criteria(coach, survivor, {"need": {"status": "unknown"}})
    before = {lead_id: _qualification_row(lead_id) for lead_id in (survivor, duplicate)}
    merge_id = _merged(coach, survivor, duplicate)
    assert _qualification_row(survivor) != before[survivor]

    response = undo(coach, merge_id)

    assert response.status == 200, response.body
    assert response.data["report"]["keptSurvivorColumns"] == []
    assert {lead_id: _qualification_row(lead_id) for lead_id in (survivor, duplicate)} == before


def test_the_nurture_reevaluation_job_reevaluates_the_survivor_not_the_merged_away_duplicate(coach):
    duplicate = _nurtured_lead(coach, "Dana Nurtured", days=3)  # nurtured at a score of 0
    survivor = _scored_lead(coach, "Dana Cohen", 100)  # the newest companySize: the survivor scores 50
    _merged(coach, survivor, duplicate)
    set_lead_columns(survivor, reevaluate_at=datetime.now(UTC) - timedelta(minutes=1))

    run_nurture_reevaluation()

    row = lead_row(survivor)
    assert (row["qualification_state"], row["reevaluate_at"]) == ("scored", None)
    (entry,) = activities(survivor, "qualification_reevaluated")
    assert entry["payload"]["backToScored"] is True
    assert [e["payload"]["action"] for e in outbox_rows(survivor, "lead.qualification_changed")][-1] == "reevaluate"
    assert not lead_exists(duplicate)
    assert [e["payload"].get("action") for e in outbox_rows(duplicate, "lead.qualification_changed")] == ["nurture"]


# -- merge then undo is the identity on both leads' qualification rows ----------------------------------------

_NOW = datetime.now(UTC).replace(microsecond=0)
_CRITERIA = ("budget", "authority", "need", "timeline")


@st.composite
def _qualification_columns(draw: st.DrawFn) -> dict[str, Any]:
    """A lead's qualification as any path could leave it: a state (or none), BANT none / some / all answered."""
    state = draw(st.sampled_from([None, "scored", "nurturing", "qualified", "disqualified"]))
    bant = draw(st.sampled_from(["none", "some", "all"]))
    answered = {"none": (), "some": _CRITERIA[: draw(st.integers(1, 3))], "all": _CRITERIA}[bant]
    criteria = {
        c: {
            "status": draw(st.sampled_from(["met", "not_met", "unknown"])),
            "evidence": f"{c} as heard",
            "recordedBy": None,
            "recordedAt": _NOW.isoformat(),
        }
        for c in answered
    }
    scored = state is not None
    return {
        "qualification_state": state,
        "qualification_reason": "no_budget" if state == "disqualified" else None,
        "qualification_criteria": criteria,
        "qualification_changed_at": _NOW - timedelta(days=draw(st.integers(0, 60))) if scored else None,
        "reevaluate_at": _NOW + timedelta(days=draw(st.integers(-2, 30))) if state == "nurturing" else None,
        "nurture_score": draw(st.integers(0, 100)) if state == "nurturing" else None,
        "score": draw(st.integers(0, 100)) if scored else None,
        "score_model_version": 1 if scored else None,
        "scored_at": _NOW if scored else None,
    }


@pytest.fixture
def modelless_coach():
    """No scoring model: a merge and an undo rescore nothing, so the rows show the merge rules alone."""
    return make_caller(role="coach")


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(survivor_columns=_qualification_columns(), duplicate_columns=_qualification_columns())
def test_merge_then_undo_is_the_identity_on_both_leads_qualification_rows(
    modelless_coach, survivor_columns, duplicate_columns
):
    suffix = uuid.uuid4().hex[:6]
    survivor = new_lead(modelless_coach, name=f"Survivor {suffix}")["id"]
    duplicate = new_lead(modelless_coach, name=f"Duplicate {suffix}")["id"]
    set_lead_columns(survivor, **survivor_columns)
    set_lead_columns(duplicate, **duplicate_columns)
    before = {lead_id: _qualification_row(lead_id) for lead_id in (survivor, duplicate)}

    merge_id = _merged(modelless_coach, survivor, duplicate)
    response = undo(modelless_coach, merge_id)

    assert response.status == 200, response.body
    assert {lead_id: _qualification_row(lead_id) for lead_id in (survivor, duplicate)} == before
