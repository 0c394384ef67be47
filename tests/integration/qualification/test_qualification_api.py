"""Qualification beside the pipeline stage (spec 1 and the lead state table): BANT with evidence; scored →
qualified / nurturing / disqualified (reason code mandatory); requalify records a new qualification event;
nurturing schedules a re-evaluation the nurture_reevaluation job picks up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leadcrm.qualification.qualification import run_nurture_reevaluation
from tests.support.api import call_api
from tests.support.erase_helpers import outbox_rows
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import activities, lead_row, patch_lead, set_lead_columns
from tests.support.qualification_helpers import (
    ALL_MET,
    create_model,
    enrich,
    lead_path,
    new_lead,
    put_criteria,
    qualification,
    transition,
)

# 50 points for a big company, 10 per touch: a lead with companySize 100 scores 50, the threshold.
RULES = [
    {"kind": "field", "field": "companySize", "operator": "gte", "value": 50, "weight": 50},
    {"kind": "engagement", "signal": "touches", "weight": 10, "max": 40},
]


@pytest.fixture
def owner():
    caller = make_caller(role="owner")
    assert create_model(caller, RULES, threshold=50, nurtureDays=14).status == 201
    return caller


@pytest.fixture
def coach(owner):
    return make_caller(role="coach", organization=owner.organization)


def _scored_lead(caller, company_size: int = 100) -> str:
    lead = new_lead(caller, name=f"Dana {company_size}")
    assert enrich(caller, lead["id"], "companySize", company_size).status == 201
    return lead["id"]


def _state(caller, lead_id) -> str | None:
    return qualification(caller, lead_id).data["state"]


def test_a_scored_lead_with_the_threshold_and_bant_met_is_qualified(coach):
    lead_id = _scored_lead(coach)
    assert put_criteria(coach, lead_id, ALL_MET).status == 200

    response = transition(coach, lead_id, "qualify")

    assert response.status == 200, response.body
    assert response.data["state"] == "qualified"
    (event,) = outbox_rows(lead_id, "lead.qualification_changed")
    assert (event["payload"]["fromState"], event["payload"]["toState"]) == ("scored", "qualified")


def test_qualifying_below_the_threshold_is_refused(coach):
    lead_id = _scored_lead(coach, company_size=10)
    put_criteria(coach, lead_id, ALL_MET)

    response = transition(coach, lead_id, "qualify")

    assert (response.status, response.error_code) == (409, "SCORE_BELOW_THRESHOLD")
    assert _state(coach, lead_id) == "scored"


def test_qualifying_without_every_bant_criterion_met_is_refused(coach):
    lead_id = _scored_lead(coach)
    put_criteria(coach, lead_id, {**ALL_MET, "timeline": {"status": "unknown"}})

    response = transition(coach, lead_id, "qualify")

    assert (response.status, response.error_code) == (409, "QUALIFICATION_CRITERIA_NOT_MET")


def test_a_criterion_marked_met_needs_evidence(coach):
    lead_id = _scored_lead(coach)
    response = put_criteria(coach, lead_id, {"budget": {"status": "met"}})
    assert (response.status, response.error_code) == (400, "EVIDENCE_REQUIRED")


def test_bant_answers_keep_their_evidence_and_who_recorded_them(coach):
    lead_id = _scored_lead(coach)
    response = put_criteria(coach, lead_id, {"need": {"status": "met", "evidence": "wants group classes"}})

    need = response.data["criteria"]["need"]
    assert (need["status"], need["evidence"], need["recordedBy"]) == ("met", "wants group classes", str(coach.user.id))
    (entry,) = activities(lead_id, "qualification_criteria_updated")
    assert entry["payload"] == {"criteria": {"need": "met"}}


def test_qualifying_with_an_unresolved_duplicate_is_refused(coach):
    lead_id = _scored_lead(coach)
    put_criteria(coach, lead_id, ALL_MET)
    set_lead_columns(lead_id, email="dup.qualify@example.com")
    copy = new_lead(coach, name="Dana Copy")
    set_lead_columns(copy["id"], email="dup.qualify@example.com")

    response = transition(coach, lead_id, "qualify")

    assert (response.status, response.error_code) == (409, "DUPLICATES_UNRESOLVED")


def test_disqualifying_needs_a_reason_code(coach):
    lead_id = _scored_lead(coach)

    response = transition(coach, lead_id, "disqualify", {"note": "not for us"})

    assert (response.status, response.error_code) == (400, "DISQUALIFY_REASON_REQUIRED")
    assert _state(coach, lead_id) == "scored"


def test_an_unknown_reason_code_is_a_bad_request(coach):
    lead_id = _scored_lead(coach)
    response = transition(coach, lead_id, "disqualify", {"reasonCode": "vibes"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_disqualified_lead_keeps_its_reason(coach):
    lead_id = _scored_lead(coach)

    response = transition(coach, lead_id, "disqualify", {"reasonCode": "no_budget", "note": "student"})

    assert (response.data["state"], response.data["reason"]) == ("disqualified", "no_budget")
    (entry,) = activities(lead_id, "qualification_changed")
    assert entry["payload"]["reasonCode"] == "no_budget"
    (event,) = outbox_rows(lead_id, "lead.qualification_changed")
    assert "note" not in event["payload"]  # staff's words stay off the bus


def test_requalifying_records_a_new_qualification_event(coach):
    lead_id = _scored_lead(coach, company_size=10)
    transition(coach, lead_id, "disqualify", {"reasonCode": "no_need"})
    put_criteria(coach, lead_id, ALL_MET)

    response = transition(coach, lead_id, "requalify", {"note": "new budget approved"})

    assert response.status == 200, response.body
    assert (response.data["state"], response.data["reason"]) == ("qualified", None)
    entries = activities(lead_id, "qualification_changed")
    assert [(e["payload"]["fromState"], e["payload"]["toState"]) for e in entries] == [
        ("scored", "disqualified"),
        ("disqualified", "qualified"),
    ]


def test_only_a_disqualified_lead_is_requalified(coach):
    lead_id = _scored_lead(coach)
    put_criteria(coach, lead_id, ALL_MET)
    response = transition(coach, lead_id, "requalify")
    assert (response.status, response.error_code) == (409, "QUALIFICATION_TRANSITION_NOT_ALLOWED")


def test_a_lead_never_scored_cannot_be_qualified_or_disqualified():
    coach = make_caller(role="coach")  # an organization without a scoring model
    lead = new_lead(coach, name="Dana")
    response = transition(coach, lead["id"], "disqualify", {"reasonCode": "spam"})
    assert (response.status, response.error_code) == (409, "NOT_SCORED")


def test_nurturing_schedules_a_reevaluation_after_the_models_nurture_days(coach):
    lead_id = _scored_lead(coach, company_size=10)
    before = datetime.now(UTC)

    response = transition(coach, lead_id, "nurture")

    assert response.data["state"] == "nurturing"
    due = datetime.fromisoformat(response.data["reevaluateAt"])
    assert before + timedelta(days=14) <= due <= datetime.now(UTC) + timedelta(days=14)


def test_qualification_is_a_second_dimension_beside_the_pipeline_stage(coach):
    lead_id = _scored_lead(coach, company_size=10)
    patch_lead(coach, lead_id, {"status": "contacted"})
    transition(coach, lead_id, "nurture", {"nurtureDays": 3})

    row = lead_row(lead_id)
    assert (row["status"], row["qualification_state"]) == ("contacted", "nurturing")


def test_the_job_returns_a_nurtured_lead_whose_score_improved_to_scored(coach):
    lead_id = _scored_lead(coach, company_size=10)
    transition(coach, lead_id, "nurture")
    enrich(coach, lead_id, "companySize", 500)  # engagement or score improves
    set_lead_columns(lead_id, reevaluate_at=datetime.now(UTC) - timedelta(minutes=1))

    run_nurture_reevaluation()

    row = lead_row(lead_id)
    assert (row["qualification_state"], row["reevaluate_at"]) == ("scored", None)
    (entry,) = activities(lead_id, "qualification_reevaluated")
    assert entry["payload"]["backToScored"] is True


def test_the_job_leaves_a_lead_whose_score_did_not_improve_in_nurture_for_later(coach):
    lead_id = _scored_lead(coach, company_size=10)
    transition(coach, lead_id, "nurture")
    set_lead_columns(lead_id, reevaluate_at=datetime.now(UTC) - timedelta(minutes=1))

    run_nurture_reevaluation()

    row = lead_row(lead_id)
    assert row["qualification_state"] == "nurturing"
    assert row["reevaluate_at"] > datetime.now(UTC) + timedelta(days=13)


def test_the_job_does_not_touch_a_lead_not_yet_due(coach):
    lead_id = _scored_lead(coach, company_size=10)
    due = datetime.fromisoformat(transition(coach, lead_id, "nurture").data["reevaluateAt"])
    enrich(coach, lead_id, "companySize", 500)

    run_nurture_reevaluation()

    assert (lead_row(lead_id)["qualification_state"], lead_row(lead_id)["reevaluate_at"]) == ("nurturing", due)


def test_the_job_runs_from_task_lifecycle(ctx, coach):
    from task_lifecycle.handler import lambda_handler

    result = lambda_handler({"job": "nurture_reevaluation"}, ctx)

    assert result["job"] == "nurture_reevaluation"
    assert {"reevaluated", "backToScored"} <= set(result)


def test_another_organizations_lead_is_not_found(coach):
    other = make_caller(role="coach")
    theirs = new_lead(other, name="Dana")
    assert qualification(coach, theirs["id"]).status == 404
    response = transition(coach, theirs["id"], "disqualify", {"reasonCode": "spam"})
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_a_transition_without_a_body_is_fine_where_nothing_is_required(coach):
    lead_id = _scored_lead(coach, company_size=10)
    response = call_api("POST", lead_path(coach, lead_id, "/qualification/nurture"), sub=coach.sub)
    assert (response.status, response.data["state"]) == (200, "nurturing")
    refused = call_api("POST", lead_path(coach, lead_id, "/qualification/disqualify"), sub=coach.sub)
    assert (refused.status, refused.error_code) == (400, "DISQUALIFY_REASON_REQUIRED")
