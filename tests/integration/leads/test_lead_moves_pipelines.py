"""A lead's secondary pipelines (add, move within, remove) and set-primary ("Primary pipeline is swappable")."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import (
    activities,
    create_lead,
    default_pipeline,
    lead_row,
    make_converted,
    make_pipeline,
    outbox_events,
    placements,
    set_placement_stage,
    status_events,
)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Moves publish lead.status_changed after commit; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="coach")


@pytest.fixture
def lead(caller):
    return create_lead(caller)


@pytest.fixture
def sales(caller, lead):
    return default_pipeline(caller.org_id)


@pytest.fixture
def courses(caller):
    return make_pipeline(caller.org_id)


def _path(caller, lead_id, pipeline_id=None, suffix=""):
    base = f"{leads_path(caller.org_id, lead_id)}/pipelines"
    return base if pipeline_id is None else f"{base}/{pipeline_id}{suffix}"


def _add(caller, lead_id, pipeline_id, stage_id=None):
    body = {"pipelineId": str(pipeline_id)}
    if stage_id is not None:
        body["stageId"] = str(stage_id)
    return call_api("POST", _path(caller, lead_id), sub=caller.sub, body=body)


def _move(caller, lead_id, pipeline_id, stage_id, **extra):
    return call_api(
        "PATCH", _path(caller, lead_id, pipeline_id), sub=caller.sub, body={"stageId": str(stage_id), **extra}
    )


def _remove(caller, lead_id, pipeline_id):
    return call_api("DELETE", _path(caller, lead_id, pipeline_id), sub=caller.sub)


def _set_primary(caller, lead_id, pipeline_id, body=None):
    return call_api("POST", _path(caller, lead_id, pipeline_id, "/set-primary"), sub=caller.sub, body=body)


# -- adding -----------------------------------------------------------------------------------------------


def test_adding_a_pipeline_places_the_lead_on_its_first_new_stage(caller, lead, courses):
    response = _add(caller, lead["id"], courses.id)
    assert response.status == 201, response.body
    assert response.data == {
        "leadId": lead["id"],
        "pipelineId": str(courses.id),
        "stageId": str(courses.stage("new")),
        "primary": False,
    }
    assert placements(lead["id"]) == {courses.id: courses.stage("new")}


def test_adding_a_pipeline_on_a_chosen_stage(caller, lead, courses):
    response = _add(caller, lead["id"], courses.id, courses.stage("trial_booked"))
    assert response.data["stageId"] == str(courses.stage("trial_booked"))


def test_adding_a_pipeline_does_not_change_the_status(caller, lead, courses):
    _add(caller, lead["id"], courses.id, courses.stage("customer"))
    row = lead_row(lead["id"])
    assert (row["status"], row["pipeline_id"]) == ("new", uuid.UUID(lead["pipelineId"]))
    assert len(status_events(lead["id"])) == 1


def test_adding_a_pipeline_is_a_pipeline_added_timeline_entry(caller, lead, courses):
    _add(caller, lead["id"], courses.id)
    (entry,) = activities(lead["id"], "pipeline_added")
    assert entry["payload"] == {"pipelineId": str(courses.id), "stageId": str(courses.stage("new"))}
    assert entry["actor_user_id"] == caller.user.id


def test_adding_the_primary_pipeline_is_a_409_already_in_pipeline(caller, lead, sales):
    response = _add(caller, lead["id"], sales.id)
    assert (response.status, response.error_code) == (409, "ALREADY_IN_PIPELINE")


def test_adding_a_pipeline_twice_is_a_409_already_in_pipeline(caller, lead, courses):
    _add(caller, lead["id"], courses.id)
    response = _add(caller, lead["id"], courses.id)
    assert (response.status, response.error_code) == (409, "ALREADY_IN_PIPELINE")


def test_adding_on_a_converted_stage_is_refused_for_an_unconverted_lead(caller, lead, courses):
    response = _add(caller, lead["id"], courses.id, courses.stage("converted"))
    assert (response.status, response.error_code) == (400, "CONVERT_REQUIRED")


def test_a_converted_lead_may_be_added_on_a_converted_stage(caller, lead, sales, courses):
    make_converted(lead["id"], sales.stage("converted"))
    assert _add(caller, lead["id"], courses.id, courses.stage("converted")).status == 201


def test_adding_with_a_stage_of_another_pipeline_is_a_400(caller, lead, sales, courses):
    response = _add(caller, lead["id"], courses.id, sales.stage("contacted"))
    assert (response.status, response.error_code) == (400, "STAGE_NOT_IN_PIPELINE")


def test_adding_a_pipeline_of_another_organization_is_a_404_like_a_random_one(caller, lead):
    foreign = make_pipeline(make_caller().org_id)
    foreign_answer = _add(caller, lead["id"], foreign.id)
    random_answer = _add(caller, lead["id"], uuid.uuid4())
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "PIPELINE_NOT_FOUND")
    assert foreign_answer.body == random_answer.body


def test_adding_to_a_pipeline_without_a_new_stage_and_no_stage_given_is_a_400(caller, lead):
    no_new = make_pipeline(caller.org_id, ["contacted", "customer", "lost"])
    response = _add(caller, lead["id"], no_new.id)
    assert (response.status, response.error_code) == (400, "NO_STAGE_FOR_STATUS")


# -- moving within a secondary pipeline --------------------------------------------------------------------


def test_moving_within_a_secondary_pipeline_moves_only_the_placement(caller, lead, courses):
    _add(caller, lead["id"], courses.id)
    response = _move(caller, lead["id"], courses.id, courses.stage("trial_booked"))
    assert response.status == 200, response.body
    assert response.data["stageId"] == str(courses.stage("trial_booked"))
    assert placements(lead["id"])[courses.id] == courses.stage("trial_booked")
    assert lead_row(lead["id"])["status"] == "new"
    assert len(status_events(lead["id"])) == 1
    assert outbox_events(lead["id"]) == []


def test_a_secondary_move_is_a_stage_moved_timeline_entry_naming_the_pipeline(caller, lead, courses):
    _add(caller, lead["id"], courses.id)
    _move(caller, lead["id"], courses.id, courses.stage("trial_booked"))
    (entry,) = activities(lead["id"], "stage_moved")
    assert entry["payload"]["pipelineId"] == str(courses.id)
    assert entry["payload"]["primary"] is False
    assert entry["payload"]["fromStageId"] == str(courses.stage("new"))
    assert entry["payload"]["toStageId"] == str(courses.stage("trial_booked"))


def test_a_secondary_move_into_converted_is_refused_for_an_unconverted_lead(caller, lead, courses):
    _add(caller, lead["id"], courses.id)
    response = _move(caller, lead["id"], courses.id, courses.stage("converted"))
    assert (response.status, response.error_code) == (400, "CONVERT_REQUIRED")


def test_a_secondary_move_to_the_current_stage_records_nothing(caller, lead, courses):
    _add(caller, lead["id"], courses.id)
    assert _move(caller, lead["id"], courses.id, courses.stage("new")).status == 200
    assert activities(lead["id"], "stage_moved") == []


def test_moving_in_a_pipeline_the_lead_is_not_in_is_a_404(caller, lead, courses):
    response = _move(caller, lead["id"], courses.id, courses.stage("contacted"))
    assert (response.status, response.error_code) == (404, "PLACEMENT_NOT_FOUND")


def test_moving_in_the_primary_pipeline_is_the_full_primary_move(caller, lead, sales):
    response = _move(caller, lead["id"], sales.id, sales.stage("contacted"))
    assert response.status == 200
    assert response.data["primary"] is True
    assert lead_row(lead["id"])["status"] == "contacted"
    assert len(outbox_events(lead["id"])) == 1


# -- removing ---------------------------------------------------------------------------------------------


def test_removing_a_secondary_pipeline_deletes_the_placement_and_is_on_the_timeline(caller, lead, courses):
    _add(caller, lead["id"], courses.id)
    response = _remove(caller, lead["id"], courses.id)
    assert response.status == 204
    assert placements(lead["id"]) == {}
    (entry,) = activities(lead["id"], "pipeline_removed")
    assert entry["payload"]["pipelineId"] == str(courses.id)


def test_the_primary_pipeline_cannot_be_removed(caller, lead, sales):
    response = _remove(caller, lead["id"], sales.id)
    assert (response.status, response.error_code) == (400, "PRIMARY_PIPELINE_NOT_REMOVABLE")


def test_removing_a_pipeline_the_lead_is_not_in_is_a_404(caller, lead, courses):
    response = _remove(caller, lead["id"], courses.id)
    assert (response.status, response.error_code) == (404, "PLACEMENT_NOT_FOUND")


# -- set-primary -------------------------------------------------------------------------------------------


def test_set_primary_swaps_the_primary_and_the_secondary_placement(caller, lead, sales, courses):
    _add(caller, lead["id"], courses.id, courses.stage("trial_booked"))
    response = _set_primary(caller, lead["id"], courses.id)
    assert response.status == 200, response.body
    assert (response.data["pipelineId"], response.data["stageId"]) == (
        str(courses.id),
        str(courses.stage("trial_booked")),
    )
    assert placements(lead["id"]) == {sales.id: sales.stage("new")}


def test_set_primary_re_mirrors_the_status_from_the_new_primary_stage(caller, lead, courses):
    _add(caller, lead["id"], courses.id, courses.stage("trial_booked"))
    before = lead_row(lead["id"])
    _set_primary(caller, lead["id"], courses.id)
    after = lead_row(lead["id"])
    assert after["status"] == "trial_booked"
    assert after["status_changed_at"] > before["status_changed_at"]
    event = status_events(lead["id"])[-1]
    assert (event["from_status"], event["to_status"]) == ("new", "trial_booked")
    assert event["to_stage_id"] == courses.stage("trial_booked")
    assert event["actor_user_id"] == caller.user.id


def test_set_primary_emits_lead_status_changed_on_a_real_category_change(caller, lead, courses):
    _add(caller, lead["id"], courses.id, courses.stage("trial_booked"))
    _set_primary(caller, lead["id"], courses.id)
    (event,) = outbox_events(lead["id"])
    assert (event["payload"]["fromStatus"], event["payload"]["toStatus"]) == ("new", "trial_booked")


def test_set_primary_without_a_category_change_emits_no_event_and_keeps_status_changed_at(caller, lead, courses):
    _add(caller, lead["id"], courses.id)  # courses' New stage: the same category
    before = lead_row(lead["id"])
    _set_primary(caller, lead["id"], courses.id)
    after = lead_row(lead["id"])
    assert after["status"] == "new"
    assert after["status_changed_at"] == before["status_changed_at"]
    assert outbox_events(lead["id"]) == []


def test_set_primary_records_a_primary_changed_timeline_entry(caller, lead, sales, courses):
    _add(caller, lead["id"], courses.id)
    _set_primary(caller, lead["id"], courses.id)
    (entry,) = activities(lead["id"], "primary_changed")
    assert entry["payload"]["fromPipelineId"] == str(sales.id)
    assert entry["payload"]["toPipelineId"] == str(courses.id)
    assert entry["actor_user_id"] == caller.user.id


def test_a_swap_cannot_fabricate_converted(caller, lead, sales, courses):
    _add(caller, lead["id"], courses.id)
    # A placement on a converted stage written before the rule existed (the API refuses to make one).
    set_placement_stage(lead["id"], courses.id, courses.stage("converted"))
    response = _set_primary(caller, lead["id"], courses.id)
    assert (response.status, response.error_code) == (400, "CONVERT_REQUIRED")
    row = lead_row(lead["id"])
    assert (row["pipeline_id"], row["status"]) == (sales.id, "new")


def test_a_converted_lead_may_swap_onto_a_converted_stage(caller, lead, sales, courses):
    make_converted(lead["id"], sales.stage("converted"))
    _add(caller, lead["id"], courses.id, courses.stage("converted"))
    response = _set_primary(caller, lead["id"], courses.id)
    assert response.status == 200
    assert response.data["status"] == "converted"


def test_a_swap_into_lost_needs_a_lost_reason(caller, lead, courses):
    _add(caller, lead["id"], courses.id, courses.stage("lost"))
    refused = _set_primary(caller, lead["id"], courses.id)
    assert (refused.status, refused.error_code) == (400, "LOST_REASON_REQUIRED")
    accepted = _set_primary(caller, lead["id"], courses.id, {"lostReason": "Moved away"})
    assert (accepted.data["status"], accepted.data["lostReason"]) == ("lost", "Moved away")


def test_set_primary_on_a_pipeline_the_lead_is_not_in_is_a_404(caller, lead, courses):
    response = _set_primary(caller, lead["id"], courses.id)
    assert (response.status, response.error_code) == (404, "PLACEMENT_NOT_FOUND")


def test_set_primary_on_the_current_primary_changes_nothing(caller, lead, sales):
    response = _set_primary(caller, lead["id"], sales.id)
    assert response.status == 200
    assert activities(lead["id"]) == []


def test_the_demoted_primary_can_then_be_removed(caller, lead, sales, courses):
    _add(caller, lead["id"], courses.id)
    _set_primary(caller, lead["id"], courses.id)
    assert _remove(caller, lead["id"], sales.id).status == 204
    assert placements(lead["id"]) == {}


def test_placement_routes_answer_404_for_a_lead_of_another_organization(caller, courses):
    other = make_caller()
    foreign = create_lead(other)
    response = _add(caller, foreign["id"], courses.id)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_a_pipeline_id_that_is_not_a_uuid_is_a_404(caller, lead):
    response = _set_primary(caller, lead["id"], "nope")
    assert response.status == 404
