"""PATCH /organizations/{orgId}/leads/{leadId}: stage and status move as one (G3, G8), and the rules a move
obeys: converted only via convert, lost needs a reason, a same-stage move records nothing."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_moves_helpers import (
    activities,
    add_stage,
    archive_stage,
    create_lead,
    default_pipeline,
    lead_row,
    make_converted,
    make_pipeline,
    outbox_events,
    patch_lead,
    set_lead_columns,
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
    """The organization's default pipeline (where the lead is), one stage per category."""
    return default_pipeline(caller.org_id)


# -- stage and status are one move -----------------------------------------------------------------------


def test_a_stage_id_moves_the_stage_and_sets_the_status_to_its_category(caller, lead, sales):
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("contacted"))})
    assert response.status == 200, response.body
    assert response.data["stageId"] == str(sales.stage("contacted"))
    assert response.data["status"] == "contacted"
    row = lead_row(lead["id"])
    assert (row["stage_id"], row["status"]) == (sales.stage("contacted"), "contacted")


def test_the_answer_is_the_lead_in_a_data_envelope(caller, lead, sales):
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("callback"))})
    assert set(response.body) == {"data"}
    assert response.data["id"] == lead["id"]
    assert "statusChangedAt" in response.data


def test_stage_id_wins_over_status(caller, lead, sales):
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("callback")), "status": "no_show"})
    assert response.status == 200
    assert (response.data["status"], response.data["stageId"]) == ("callback", str(sales.stage("callback")))


def test_a_bare_status_moves_to_the_first_active_stage_of_that_category(caller, lead, sales):
    add_stage(sales, caller.org_id, "contacted")  # a second Contacted stage, after the first
    response = patch_lead(caller, lead["id"], {"status": "contacted"})
    assert response.status == 200
    assert response.data["stageId"] == str(sales.stage("contacted"))


def test_a_bare_status_skips_archived_stages(caller, lead):
    funnel = make_pipeline(caller.org_id, ["new", "contacted", "contacted", "customer", "lost"])
    set_lead_columns(lead["id"], pipeline_id=funnel.id, stage_id=funnel.stage("new"))
    archive_stage(funnel.stage("contacted"))
    response = patch_lead(caller, lead["id"], {"status": "contacted"})
    assert response.data["stageId"] == str(funnel.stage("contacted", 1))


def test_a_bare_status_resolves_in_the_leads_primary_pipeline_not_a_secondary_one(caller, lead, sales):
    courses = make_pipeline(caller.org_id)
    added = call_api(
        "POST",
        f"{leads_path(caller.org_id, lead['id'])}/pipelines",
        sub=caller.sub,
        body={"pipelineId": str(courses.id)},
    )
    assert added.status == 201, added.body
    response = patch_lead(caller, lead["id"], {"status": "trial_booked"})
    assert response.data["stageId"] == str(sales.stage("trial_booked"))
    assert response.data["pipelineId"] == str(sales.id)


def test_a_status_with_no_stage_in_the_primary_pipeline_is_a_400(caller, lead):
    lean = make_pipeline(caller.org_id, ["new", "customer", "lost"])
    set_lead_columns(lead["id"], pipeline_id=lean.id, stage_id=lean.stage("new"))
    response = patch_lead(caller, lead["id"], {"status": "callback"})
    assert (response.status, response.error_code) == (400, "NO_STAGE_FOR_STATUS")


def test_a_bare_status_the_lead_already_has_is_no_move(caller, lead, sales):
    sales = add_stage(sales, caller.org_id, "new")
    set_lead_columns(lead["id"], stage_id=sales.stage("new", 1))
    response = patch_lead(caller, lead["id"], {"status": "new"})
    assert response.status == 200
    assert response.data["stageId"] == str(sales.stage("new", 1))
    assert len(status_events(lead["id"])) == 1  # the creation only


def test_a_stage_of_another_pipeline_is_a_400_stage_not_in_pipeline(caller, lead):
    courses = make_pipeline(caller.org_id)
    response = patch_lead(caller, lead["id"], {"stageId": str(courses.stage("contacted"))})
    assert (response.status, response.error_code) == (400, "STAGE_NOT_IN_PIPELINE")


def test_an_unknown_stage_is_a_404_stage_not_found(caller, lead):
    response = patch_lead(caller, lead["id"], {"stageId": str(uuid.uuid4())})
    assert (response.status, response.error_code) == (404, "STAGE_NOT_FOUND")


def test_a_stage_of_another_organization_answers_exactly_like_an_unknown_one(caller, lead):
    other = make_caller()
    foreign = default_pipeline(other.org_id)
    foreign_answer = patch_lead(caller, lead["id"], {"stageId": str(foreign.stage("contacted"))})
    random_answer = patch_lead(caller, lead["id"], {"stageId": str(uuid.uuid4())})
    assert (foreign_answer.status, foreign_answer.body) == (random_answer.status, random_answer.body)


def test_an_archived_stage_is_a_400_stage_archived(caller, lead, sales):
    sales = add_stage(sales, caller.org_id, "contacted", archived=True)
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("contacted", 1))})
    assert (response.status, response.error_code) == (400, "STAGE_ARCHIVED")


# -- statusChangedAt, status events, lead.status_changed -------------------------------------------------


def test_a_category_change_bumps_status_changed_at(caller, lead, sales):
    before = lead_row(lead["id"])
    patch_lead(caller, lead["id"], {"stageId": str(sales.stage("contacted"))})
    after = lead_row(lead["id"])
    assert after["status_changed_at"] > before["status_changed_at"]
    assert after["updated_at"] > before["updated_at"]


def test_a_same_category_move_changes_the_stage_but_not_status_changed_at(caller, lead, sales):
    sales = add_stage(sales, caller.org_id, "new")
    before = lead_row(lead["id"])
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("new", 1))})
    after = lead_row(lead["id"])
    assert response.data["stageId"] == str(sales.stage("new", 1))
    assert after["status"] == "new"
    assert after["status_changed_at"] == before["status_changed_at"]
    assert after["updated_at"] > before["updated_at"]


def test_every_stage_change_appends_a_status_event_with_stages_and_actor(caller, lead, sales):
    patch_lead(caller, lead["id"], {"stageId": str(sales.stage("contacted"))})
    event = status_events(lead["id"])[-1]
    assert (event["from_status"], event["to_status"]) == ("new", "contacted")
    assert (event["from_stage_id"], event["to_stage_id"]) == (sales.stage("new"), sales.stage("contacted"))
    assert event["actor_user_id"] == caller.user.id
    assert event["organization_id"] == caller.org_id


def test_a_same_category_move_appends_a_status_event_too(caller, lead, sales):
    sales = add_stage(sales, caller.org_id, "new")
    patch_lead(caller, lead["id"], {"stageId": str(sales.stage("new", 1))})
    event = status_events(lead["id"])[-1]
    assert (event["from_status"], event["to_status"]) == ("new", "new")
    assert event["to_stage_id"] == sales.stage("new", 1)


def test_every_stage_change_is_a_stage_moved_timeline_entry_by_the_actor(caller, lead, sales):
    patch_lead(caller, lead["id"], {"stageId": str(sales.stage("contacted"))})
    (entry,) = activities(lead["id"], "stage_moved")
    assert entry["actor_user_id"] == caller.user.id
    assert entry["payload"]["fromStageId"] == str(sales.stage("new"))
    assert entry["payload"]["toStageId"] == str(sales.stage("contacted"))
    assert entry["payload"]["pipelineId"] == str(sales.id)


def test_a_category_change_writes_one_lead_status_changed_event_with_ids_only(caller, lead, sales):
    patch_lead(caller, lead["id"], {"stageId": str(sales.stage("contacted"))})
    (event,) = outbox_events(lead["id"])
    assert event["payload"] == {
        "leadId": lead["id"],
        "fromStatus": "new",
        "toStatus": "contacted",
        "fromStageId": str(sales.stage("new")),
        "toStageId": str(sales.stage("contacted")),
        "actorUserId": str(caller.user.id),
    }
    assert event["organization_id"] == caller.org_id


def test_a_same_category_move_writes_no_lead_status_changed_event(caller, lead, sales):
    sales = add_stage(sales, caller.org_id, "new")
    patch_lead(caller, lead["id"], {"stageId": str(sales.stage("new", 1))})
    assert outbox_events(lead["id"]) == []


def test_a_move_to_the_current_stage_changes_and_records_nothing(caller, lead, sales):
    before = lead_row(lead["id"])
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("new"))})
    assert response.status == 200
    assert lead_row(lead["id"]) == before
    assert len(status_events(lead["id"])) == 1
    assert activities(lead["id"]) == []
    assert outbox_events(lead["id"]) == []


# -- converted only via convert --------------------------------------------------------------------------


def test_a_move_into_a_converted_stage_is_a_400_convert_required(caller, lead, sales):
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("converted"))})
    assert (response.status, response.error_code) == (400, "CONVERT_REQUIRED")
    assert lead_row(lead["id"])["status"] == "new"


def test_a_bare_converted_status_is_a_400_convert_required(caller, lead):
    response = patch_lead(caller, lead["id"], {"status": "converted"})
    assert (response.status, response.error_code) == (400, "CONVERT_REQUIRED")


def test_a_converted_lead_may_be_repositioned_between_converted_stages(caller, lead, sales):
    sales = add_stage(sales, caller.org_id, "converted")
    make_converted(lead["id"], sales.stage("converted"))
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("converted", 1))})
    assert response.status == 200, response.body
    assert (response.data["status"], response.data["stageId"]) == ("converted", str(sales.stage("converted", 1)))


def test_a_customer_stage_needs_no_convert(caller, lead, sales):
    response = patch_lead(caller, lead["id"], {"status": "customer"})
    assert response.status == 200
    assert response.data["status"] == "customer"


# -- lost needs a reason, and the reason and history are kept --------------------------------------------


def test_moving_to_lost_without_a_reason_is_a_400_lost_reason_required(caller, lead):
    response = patch_lead(caller, lead["id"], {"status": "lost"})
    assert (response.status, response.error_code) == (400, "LOST_REASON_REQUIRED")


def test_moving_to_lost_with_a_reason_keeps_it_on_the_lead(caller, lead):
    response = patch_lead(caller, lead["id"], {"status": "lost", "lostReason": "Too far away"})
    assert response.status == 200
    assert (response.data["status"], response.data["lostReason"]) == ("lost", "Too far away")


def test_the_lost_reason_is_kept_in_the_status_history_and_on_the_timeline(caller, lead):
    patch_lead(caller, lead["id"], {"status": "lost", "lostReason": "Too far away"})
    assert status_events(lead["id"])[-1]["reason"] == "Too far away"
    assert activities(lead["id"], "stage_moved")[-1]["payload"]["lostReason"] == "Too far away"


def test_leaving_lost_clears_the_leads_lost_reason_but_the_history_keeps_it(caller, lead):
    patch_lead(caller, lead["id"], {"status": "lost", "lostReason": "Too far away"})
    response = patch_lead(caller, lead["id"], {"status": "contacted"})
    assert response.data["lostReason"] is None
    reasons = [e["reason"] for e in status_events(lead["id"])]
    assert "Too far away" in reasons


def test_a_lost_reason_for_a_lead_that_does_not_end_up_lost_is_a_400(caller, lead):
    response = patch_lead(caller, lead["id"], {"status": "contacted", "lostReason": "Too far away"})
    assert (response.status, response.error_code) == (400, "LOST_REASON_NOT_LOST")


def test_a_lost_lead_may_correct_its_reason_and_the_correction_is_on_the_timeline(caller, lead):
    patch_lead(caller, lead["id"], {"status": "lost", "lostReason": "Too far away"})
    response = patch_lead(caller, lead["id"], {"lostReason": "Chose another gym"})
    assert response.data["lostReason"] == "Chose another gym"
    (entry,) = activities(lead["id"], "lost_reason_changed")
    assert entry["payload"] == {"from": "Too far away", "to": "Chose another gym"}
    assert entry["actor_user_id"] == caller.user.id


def test_moving_between_lost_stages_keeps_the_reason(caller, lead, sales):
    sales = add_stage(sales, caller.org_id, "lost")
    patch_lead(caller, lead["id"], {"status": "lost", "lostReason": "Too far away"})
    response = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("lost", 1))})
    assert response.status == 200
    assert response.data["lostReason"] == "Too far away"


# -- trial date (G3) -------------------------------------------------------------------------------------


def test_trial_booked_with_a_trial_date_stores_both(caller, lead):
    response = patch_lead(caller, lead["id"], {"status": "trial_booked", "trialDate": "2026-06-01T10:00:00Z"})
    assert response.status == 200
    assert response.data["status"] == "trial_booked"
    assert response.data["trialDate"].startswith("2026-06-01T10:00:00")


def test_a_trial_date_without_a_timezone_is_a_400(caller, lead):
    response = patch_lead(caller, lead["id"], {"trialDate": "2026-06-01T10:00:00"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_null_trial_date_clears_it(caller, lead):
    patch_lead(caller, lead["id"], {"trialDate": "2026-06-01T10:00:00Z"})
    response = patch_lead(caller, lead["id"], {"trialDate": None})
    assert response.data["trialDate"] is None


# -- test enquiries and contact corrections ---------------------------------------------------------------


def test_a_lead_can_be_marked_as_a_test_and_the_mark_is_on_the_timeline(caller, lead):
    response = patch_lead(caller, lead["id"], {"isTest": True})
    assert response.data["isTest"] is True
    (entry,) = activities(lead["id"], "test_flag_changed")
    assert entry["payload"] == {"isTest": True}
    assert entry["actor_user_id"] == caller.user.id


def test_the_test_mark_can_be_removed(caller, lead):
    patch_lead(caller, lead["id"], {"isTest": True})
    assert patch_lead(caller, lead["id"], {"isTest": False}).data["isTest"] is False


def test_contact_corrections_update_the_lead_and_name_the_fields_on_the_timeline(caller, lead):
    response = patch_lead(caller, lead["id"], {"email": "ada@example.com", "phone": "+44 20 7946 0958"})
    assert (response.data["email"], response.data["phone"]) == ("ada@example.com", "+44 20 7946 0958")
    (entry,) = activities(lead["id"], "details_updated")
    assert sorted(entry["payload"]["fields"]) == ["email", "phone"]


def test_an_edit_that_leaves_no_name_email_or_phone_is_a_400(caller, lead):
    response = patch_lead(caller, lead["id"], {"name": None})
    assert (response.status, response.error_code) == (400, "LEAD_NEEDS_CONTACT")


def test_an_edit_to_the_same_values_records_nothing(caller, lead):
    response = patch_lead(caller, lead["id"], {"name": lead["name"], "isTest": False})
    assert response.status == 200
    assert activities(lead["id"]) == []


# -- who may, and which lead -------------------------------------------------------------------------------


def test_a_lead_of_another_organization_answers_exactly_like_a_random_id(caller, sales):
    other = make_caller()
    foreign = create_lead(other)
    foreign_answer = patch_lead(caller, foreign["id"], {"isTest": True})
    random_answer = patch_lead(caller, uuid.uuid4(), {"isTest": True})
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "LEAD_NOT_FOUND")
    assert (foreign_answer.status, foreign_answer.body) == (random_answer.status, random_answer.body)
    assert lead_row(foreign["id"])["is_test"] is False


def test_a_lead_id_that_is_not_a_uuid_is_a_404(caller):
    response = patch_lead(caller, "not-a-uuid", {"isTest": True})
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_a_member_may_not_move_leads(caller, lead, sales):
    member_user = make_user()
    make_membership(caller.organization, member_user, role="member")
    response = call_api(
        "PATCH",
        leads_path(caller.org_id, lead["id"]),
        sub=member_user.auth_subject,
        body={"stageId": str(sales.stage("contacted"))},
    )
    assert response.status == 403


@pytest.mark.parametrize("role", ["owner", "admin", "coach"])
def test_owner_admin_and_coach_may_move_leads(role, sales, lead, caller):
    user = make_user()
    make_membership(caller.organization, user, role=role)
    response = call_api(
        "PATCH",
        leads_path(caller.org_id, lead["id"]),
        sub=user.auth_subject,
        body={"stageId": str(sales.stage("contacted"))},
    )
    assert response.status == 200
