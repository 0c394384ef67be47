"""The staff Reopen action `POST /organizations/{orgId}/leads/{leadId}/reopen`: a closed lead is reopened with
the caller as the Sales actor; an open lead answers 200 already_open and is left alone; a won lead is 400
LEAD_WON_NOT_REOPENABLE; staff only; another organization's lead is a 404 exactly like a random id."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import default_pipeline
from tests.support.returning_helpers import insert_lead, lead_state, outbox_of, reopen, status_events_of, timeline_of


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """A reopen publishes after commit; the bus exists."""


@pytest.fixture
def coach():
    return make_caller(role="coach")


@pytest.fixture
def sales(coach):
    return default_pipeline(coach.org_id)


def test_reopening_a_lost_lead_answers_200_with_the_reopened_lead(coach, sales):
    lead_id = insert_lead(coach.org_id, sales, "lost")
    response = reopen(coach, lead_id)
    assert response.status == 200, response.body
    assert response.body["meta"] == {"outcome": "reopened"}
    data = response.data
    assert (data["id"], data["status"], data["stageId"]) == (str(lead_id), "new", str(sales.stage("new")))
    assert (data["returnedFromStatus"], data["returnedVia"], data["returnCount"]) == ("lost", "staff_reopen", 1)
    assert data["returnedAt"] == data["nextActionAt"] and data["nextActionType"] == "call"
    assert data["lostReason"] is None and data["archivedAt"] is None


def test_the_caller_is_the_actor_and_takes_the_unowned_lead(coach, sales):
    lead_id = insert_lead(coach.org_id, sales, "frozen")
    reopen(coach, lead_id)
    [event] = status_events_of(lead_id)
    assert event["actor_user_id"] == coach.user.id
    assert lead_state(lead_id)["assigned_to_user_id"] == coach.user.id
    [entry] = timeline_of(lead_id, "lead_returned")
    assert (entry["actor_user_id"], entry["payload"]["via"]) == (coach.user.id, "staff_reopen")
    [changed] = outbox_of(lead_id, "lead.status_changed")
    assert changed["payload"]["actorUserId"] == str(coach.user.id)


def test_an_archived_lead_is_reopened_in_place(coach, sales):
    lead_id = insert_lead(coach.org_id, sales, "callback", archived_at=datetime.now(UTC))
    response = reopen(coach, lead_id)
    assert (response.status, response.body["meta"]["outcome"]) == (200, "reopened")
    assert (response.data["status"], response.data["archivedAt"]) == ("callback", None)


def test_a_note_sent_with_the_reopen_is_appended(coach, sales):
    lead_id = insert_lead(coach.org_id, sales, "lost", note="Too expensive last spring.")
    response = reopen(coach, lead_id, {"note": "Called in: has a new job, wants to start"})
    assert response.data["note"] == "Too expensive last spring.\nCalled in: has a new job, wants to start"


def test_an_empty_body_is_a_reopen_without_a_note(coach, sales):
    lead_id = insert_lead(coach.org_id, sales, "lost", note="Kept")
    response = reopen(coach, lead_id, {})
    assert (response.status, response.data["note"]) == (200, "Kept")


def test_an_open_lead_answers_already_open_and_nothing_changes(coach, sales):
    lead_id = insert_lead(coach.org_id, sales, "contacted")
    before = lead_state(lead_id)
    response = reopen(coach, lead_id, {"note": "again"})
    assert (response.status, response.body["meta"]) == (200, {"outcome": "already_open"})
    assert response.data["returnCount"] == 0
    assert lead_state(lead_id) == before


def test_a_second_click_is_already_open(coach, sales):
    lead_id = insert_lead(coach.org_id, sales, "lost")
    assert reopen(coach, lead_id).body["meta"]["outcome"] == "reopened"
    second = reopen(coach, lead_id)
    assert (second.status, second.body["meta"]["outcome"]) == (200, "already_open")
    assert lead_state(lead_id)["return_count"] == 1


@pytest.mark.parametrize("category", ["converted", "customer"])
def test_a_won_lead_is_400_and_is_not_reopened(coach, sales, category):
    lead_id = insert_lead(coach.org_id, sales, category, archived_at=datetime.now(UTC))
    before = lead_state(lead_id)
    response = reopen(coach, lead_id)
    assert (response.status, response.error_code) == (400, "LEAD_WON_NOT_REOPENABLE")
    assert lead_state(lead_id) == before


def test_another_organizations_lead_answers_like_a_random_id(coach, sales):
    other = make_caller(role="owner")
    foreign = insert_lead(other.org_id, default_pipeline(other.org_id), "lost")
    foreign_answer = reopen(coach, foreign)
    random_answer = reopen(coach, uuid.uuid4())
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "LEAD_NOT_FOUND")
    assert foreign_answer.body == random_answer.body
    assert lead_state(foreign)["status"] == "lost"


def test_a_lead_id_that_is_not_a_uuid_is_not_found(coach):
    response = reopen(coach, "not-a-uuid")
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_a_member_may_not_reopen(coach, sales):
    member = make_caller(role="member", organization=coach.organization)
    lead_id = insert_lead(coach.org_id, sales, "lost")
    response = reopen(member, lead_id)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")
    assert lead_state(lead_id)["status"] == "lost"


def test_someone_outside_the_organization_may_not_reopen(coach, sales):
    outsider = make_caller(role="owner")
    response = reopen(outsider, insert_lead(coach.org_id, sales, "lost"), org_id=coach.org_id)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_an_organization_without_lead_management_may_not_reopen():
    caller = make_caller(role="owner", features={})
    lead_id = insert_lead(caller.org_id, default_pipeline(caller.org_id), "lost")
    assert reopen(caller, lead_id).error_code == "FEATURE_DISABLED"


@pytest.mark.parametrize(
    "body",
    [{"note": "x" * 5001}, {"note": 12}, {"unknown": True}, {"note": "a\x00b"}, [{"note": "x"}]],
)
def test_a_bad_body_is_a_400_and_reopens_nothing(coach, sales, body):
    lead_id = insert_lead(coach.org_id, sales, "lost")
    response = reopen(coach, lead_id, body)
    assert response.status == 400, response.body
    assert lead_state(lead_id)["status"] == "lost"


def test_the_route_is_in_the_openapi_document():
    from tests.support.api import invoke
    from tests.support.events import http_api_event

    paths = invoke(http_api_event("GET", "/openapi.json", sub=None, authorizer=False)).body["paths"]
    assert "post" in paths["/organizations/{orgId}/leads/{leadId}/reopen"]
