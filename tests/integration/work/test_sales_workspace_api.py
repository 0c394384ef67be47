"""The Sales workspace (issue 26): versioned lead writes, the Board's stage write, the Sales sheet's results,
the Work queue's needs-reply view and what the caller may do (access/me). Through the real handler, on real
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from leadcrm.leads.tables import lead_activity_events
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.attention_helpers import attention_lead
from tests.support.concurrency import run_together
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.follow_ups_helpers import lead_tasks
from tests.support.lead_list_helpers import make_board
from tests.support.lead_moves_helpers import (
    activities,
    create_lead,
    default_pipeline,
    lead_row,
    make_pipeline,
    patch_lead,
)

TRIAL = "2030-03-01T10:00:00+00:00"


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Moves publish lead.status_changed after commit; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="coach")


@pytest.fixture
def colleague(caller):
    user = make_user()
    make_membership(caller.organization, user, role="coach")
    return type(caller)(organization=caller.organization, user=user, membership=None)  # type: ignore[arg-type]


@pytest.fixture
def sales(caller):
    return default_pipeline(caller.org_id)


@pytest.fixture
def lead(caller, sales):
    return create_lead(caller)


def _workspace(caller, lead_id, what: str) -> str:
    return f"/organizations/{caller.org_id}/sales-workspace/leads/{lead_id}/{what}"


def stage(caller, lead_id, body, headers=None):
    return call_api("PUT", _workspace(caller, lead_id, "stage"), sub=caller.sub, body=body, headers=headers)


def result(caller, lead_id, body, headers=None):
    return call_api("POST", _workspace(caller, lead_id, "results"), sub=caller.sub, body=body, headers=headers)


def read(caller, lead_id):
    response = call_api("GET", leads_path(caller.org_id, lead_id), sub=caller.sub)
    assert response.status == 200, response.body
    return response


def _groups_since(lead_id, since) -> int:
    with get_engine().connect() as conn:
        return conn.execute(
            select(func.count(func.distinct(lead_activity_events.c.group_xact))).where(
                lead_activity_events.c.lead_id == lead_id, lead_activity_events.c.occurred_at >= since
            )
        ).scalar_one()


# -- every lead has a version ---------------------------------------------------------------------------------


def test_a_new_lead_is_at_version_one_and_its_read_carries_the_version_as_etag(caller, lead):
    response = read(caller, lead["id"])
    assert lead["version"] == 1
    assert response.data["version"] == 1
    assert response.headers["etag"] == '"1"'


def test_every_write_bumps_the_version_once(caller, lead, sales):
    moved = patch_lead(caller, lead["id"], {"stageId": str(sales.stage("contacted"))})
    assert moved.data["version"] == 2
    assert moved.headers["etag"] == '"2"'
    follow_up = call_api(
        "PUT",
        leads_path(caller.org_id, lead["id"]) + "/follow-up",
        sub=caller.sub,
        body={"at": "2030-01-01T10:00:00Z", "type": "call"},
    )
    assert follow_up.data["version"] == 3


def test_a_secondary_placement_bumps_the_version_without_writing_the_lead_itself(caller, lead):
    courses = make_pipeline(caller.org_id)
    added = call_api(
        "POST",
        leads_path(caller.org_id, lead["id"]) + "/pipelines",
        sub=caller.sub,
        body={"pipelineId": str(courses.id)},
    )
    assert added.status == 201, added.body
    assert lead_row(lead["id"])["version"] == 2
    removed = call_api("DELETE", leads_path(caller.org_id, lead["id"]) + f"/pipelines/{courses.id}", sub=caller.sub)
    assert removed.status == 204
    assert lead_row(lead["id"])["version"] == 3


def test_a_stale_version_is_409_with_the_current_lead(caller, lead, sales):
    patch_lead(caller, lead["id"], {"note": "first"})
    stale = patch_lead(caller, lead["id"], {"note": "second", "version": 1})
    assert stale.status == 409
    assert stale.error_code == "LEAD_VERSION_CONFLICT"
    assert stale.body["error"]["lead"]["version"] == 2
    assert stale.body["error"]["lead"]["note"] == "first"
    assert lead_row(lead["id"])["note"] == "first"


def test_if_match_is_checked_like_the_body_version(caller, lead):
    patch_lead(caller, lead["id"], {"note": "first"})
    stale = call_api(
        "PATCH", leads_path(caller.org_id, lead["id"]), sub=caller.sub, body={"note": "x"}, headers={"If-Match": '"1"'}
    )
    assert stale.status == 409
    fresh = call_api(
        "PATCH", leads_path(caller.org_id, lead["id"]), sub=caller.sub, body={"note": "x"}, headers={"If-Match": '"2"'}
    )
    assert fresh.status == 200, fresh.body
    assert fresh.data["version"] == 3


def test_a_write_without_a_version_behaves_as_before(caller, lead):
    patch_lead(caller, lead["id"], {"note": "first"})
    assert patch_lead(caller, lead["id"], {"note": "second"}).status == 200


def test_an_if_match_that_is_no_etag_is_400(caller, lead):
    response = call_api(
        "PATCH", leads_path(caller.org_id, lead["id"]), sub=caller.sub, body={"note": "x"}, headers={"If-Match": "abc"}
    )
    assert (response.status, response.error_code) == (400, "INVALID_IF_MATCH")


def test_if_match_and_version_that_disagree_are_400(caller, lead):
    response = call_api(
        "PATCH",
        leads_path(caller.org_id, lead["id"]),
        sub=caller.sub,
        body={"note": "x", "version": 1},
        headers={"If-Match": '"2"'},
    )
    assert (response.status, response.error_code) == (400, "LEAD_VERSION_AMBIGUOUS")


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("POST", "/touches", {"channel": "call", "version": 1}),
        ("PUT", "/follow-up", {"at": "2030-01-01T10:00:00Z", "type": "call", "version": 1}),
        ("POST", "/archive", None),
    ],
)
def test_the_person_facing_writes_refuse_a_stale_version(caller, lead, method, suffix, body):
    patch_lead(caller, lead["id"], {"note": "first"})
    headers = {"If-Match": '"1"'} if body is None else None
    response = call_api(
        method, leads_path(caller.org_id, lead["id"]) + suffix, sub=caller.sub, body=body, headers=headers
    )
    assert (response.status, response.error_code) == (409, "LEAD_VERSION_CONFLICT")


def test_two_writers_with_the_same_version_at_once_one_wins(caller, colleague, lead, sales):
    bodies = [
        (caller, {"version": 1, "stageId": str(sales.stage("contacted"))}),
        (colleague, {"version": 1, "stageId": str(sales.stage("callback"))}),
    ]
    results, errors = run_together([lambda c=c, b=b: stage(c, lead["id"], b) for c, b in bodies])
    assert errors == [None, None]
    assert sorted(r.status for r in results) == [200, 409]
    winner = next(r for r in results if r.status == 200)
    assert lead_row(lead["id"])["stage_id"] == sales.stage(winner.data["status"])
    assert lead_row(lead["id"])["version"] == 2


# -- the Board's stage write ----------------------------------------------------------------------------------


def test_the_stage_write_moves_the_lead_and_answers_its_new_version(caller, lead, sales):
    response = stage(caller, lead["id"], {"version": 1, "stageId": str(sales.stage("contacted"))})
    assert response.status == 200, response.body
    assert (response.data["status"], response.data["version"]) == ("contacted", 2)
    assert response.headers["etag"] == '"2"'


def test_the_stage_write_needs_a_version(caller, lead, sales):
    response = stage(caller, lead["id"], {"stageId": str(sales.stage("contacted"))})
    assert (response.status, response.error_code) == (400, "LEAD_VERSION_REQUIRED")


def test_the_stage_write_refuses_a_converted_stage(caller, lead, sales):
    response = stage(caller, lead["id"], {"version": 1, "stageId": str(sales.stage("converted"))})
    assert (response.status, response.error_code) == (400, "CONVERT_REQUIRED")
    assert lead_row(lead["id"])["version"] == 1


def test_a_trial_booked_stage_needs_a_trial_date(caller, lead, sales):
    refused = stage(caller, lead["id"], {"version": 1, "stageId": str(sales.stage("trial_booked"))})
    assert (refused.status, refused.error_code) == (400, "TRIAL_DATE_REQUIRED")
    booked = stage(caller, lead["id"], {"version": 1, "stageId": str(sales.stage("trial_booked")), "trialDate": TRIAL})
    assert booked.status == 200, booked.body
    assert lead_row(lead["id"])["trial_date"] == datetime(2030, 3, 1, 10, tzinfo=UTC)


# -- the Sales sheet's results --------------------------------------------------------------------------------


def test_a_result_then_a_stale_drag_is_409_and_a_retry_with_the_new_version_succeeds(caller, colleague, lead, sales):
    n = read(caller, lead["id"]).data["version"]
    logged = result(caller, lead["id"], {"version": n, "outcome": "no_answer"})
    assert logged.status == 200, logged.body
    drag = stage(colleague, lead["id"], {"version": n, "stageId": str(sales.stage("trial_booked")), "trialDate": TRIAL})
    assert (drag.status, drag.error_code) == (409, "LEAD_VERSION_CONFLICT")
    assert drag.body["error"]["lead"]["version"] == n + 1
    retry = stage(
        colleague, lead["id"], {"version": n + 1, "stageId": str(sales.stage("trial_booked")), "trialDate": TRIAL}
    )
    assert retry.status == 200, retry.body
    assert retry.data["version"] == n + 2


def test_a_result_with_outcome_follow_up_and_stage_is_one_group_one_bump_and_one_open_task(caller, lead, sales):
    since = datetime.now(UTC)
    response = result(
        caller,
        lead["id"],
        {
            "version": 1,
            "outcome": "callback_requested",
            "note": "Call after six",
            "followUp": {"at": "2030-01-02T18:00:00+00:00"},
            "stageId": str(sales.stage("trial_booked")),
            "trialDate": TRIAL,
        },
    )
    assert response.status == 200, response.body
    assert (response.data["version"], response.data["status"]) == (2, "trial_booked")
    assert response.headers["etag"] == '"2"'
    assert response.data["nextActionAt"].startswith("2030-01-02T18:00:00")
    assert len(lead_tasks(lead["id"], open_only=True)) == 1
    assert {a["type"] for a in activities(lead["id"])} >= {"call_logged", "follow_up_set", "stage_moved"}
    assert _groups_since(lead["id"], since) == 1
    timeline = read(caller, lead["id"]).data["timeline"]
    operation = [entry for entry in timeline if entry["type"] in {"call_logged", "follow_up_set", "stage_moved"}]
    operation += [entry for entry in timeline if entry["type"] == "status_changed" and entry["toStatus"] != "new"]
    assert len({entry["group"] for entry in operation}) == 1
    created = [entry for entry in timeline if entry["type"] == "status_changed" and entry["toStatus"] == "new"]
    assert created[0]["group"] != operation[0]["group"]


def test_a_result_applies_the_outcome_under_the_call_outcome_rules(caller, lead):
    response = result(caller, lead["id"], {"version": 1, "outcome": "sale"})
    assert (response.status, response.error_code) == (400, "OUTCOME_REQUIRES_TRIAL_BOOKED")
    assert lead_row(lead["id"])["version"] == 1


def test_a_result_that_asks_for_nothing_is_400(caller, lead):
    response = result(caller, lead["id"], {"version": 1})
    assert (response.status, response.error_code) == (400, "RESULT_EMPTY")


def test_a_result_without_outcome_or_note_logs_no_contact(caller, lead):
    response = result(caller, lead["id"], {"version": 1, "followUp": {"at": "2030-01-02T18:00:00+00:00"}})
    assert response.status == 200, response.body
    assert activities(lead["id"], "call_logged") == []
    assert lead_row(lead["id"])["last_contact_attempt_at"] is None


def test_a_null_follow_up_clears_it(caller, lead):
    result(caller, lead["id"], {"version": 1, "followUp": {"at": "2030-01-02T18:00:00+00:00"}})
    cleared = result(caller, lead["id"], {"version": 2, "outcome": "contacted", "followUp": None})
    assert cleared.status == 200, cleared.body
    assert cleared.data["nextActionAt"] is None
    assert lead_tasks(lead["id"], open_only=True) == []


def test_a_result_replayed_with_its_key_has_one_effect(caller, lead):
    body = {"version": 1, "outcome": "no_answer", "note": "rang twice"}
    headers = {"Idempotency-Key": "result-1"}
    answers = [result(caller, lead["id"], body, headers) for _ in range(3)]
    assert [a.status for a in answers] == [200, 200, 200]
    assert answers[1].headers.get("idempotent-replayed") == "true"
    assert len(activities(lead["id"], "call_logged")) == 1
    assert lead_row(lead["id"])["version"] == 2
    assert answers[2].data == answers[0].data
    assert answers[2].headers["etag"] == '"2"'


def test_a_replayed_result_leaves_other_routes_replays_without_an_etag(caller, lead):
    result(caller, lead["id"], {"version": 1, "note": "once"}, {"Idempotency-Key": "result-3"})
    result(caller, lead["id"], {"version": 1, "note": "once"}, {"Idempotency-Key": "result-3"})
    path = f"/organizations/{caller.org_id}/leads"
    first = call_api("POST", path, sub=caller.sub, body={"name": "Other"}, headers={"Idempotency-Key": "c-1"})
    replay = call_api("POST", path, sub=caller.sub, body={"name": "Other"}, headers={"Idempotency-Key": "c-1"})
    assert (first.status, replay.headers.get("idempotent-replayed")) == (201, "true")
    assert "etag" not in replay.headers


def test_a_result_key_reused_with_another_body_is_422(caller, lead):
    result(caller, lead["id"], {"version": 1, "outcome": "no_answer"}, {"Idempotency-Key": "result-2"})
    reused = result(caller, lead["id"], {"version": 1, "outcome": "contacted"}, {"Idempotency-Key": "result-2"})
    assert (reused.status, reused.error_code) == (422, "IDEMPOTENCY_KEY_REUSED")


def test_ten_results_sent_at_once_with_one_key_have_one_effect(caller, lead):
    body = {"version": 1, "outcome": "no_answer"}
    results, errors = run_together([lambda: result(caller, lead["id"], body, {"Idempotency-Key": "r-10"})] * 10)
    assert errors == [None] * 10
    assert {r.status for r in results} == {200}
    assert len(activities(lead["id"], "call_logged")) == 1
    assert lead_row(lead["id"])["version"] == 2


# -- the Work queue's needs-reply view -----------------------------------------------------------------------


def test_the_needs_reply_view_lists_the_inbound_unanswered_leads():
    owner = make_caller(role="owner")
    board = make_board(owner.org_id, "Sales", default=True)
    waiting = attention_lead(board, last_inbound_at=datetime.now(UTC) - timedelta(hours=1))
    attention_lead(board)  # unassigned only: not a reply to give
    response = call_api(
        "GET", f"/organizations/{owner.org_id}/leads/queue", sub=owner.sub, query={"view": "needs_reply"}
    )
    assert response.status == 200, response.body
    assert [item["id"] for item in response.data] == [str(waiting)]


def test_the_needs_reply_view_with_another_reason_is_400():
    owner = make_caller(role="owner")
    response = call_api(
        "GET",
        f"/organizations/{owner.org_id}/leads/queue",
        sub=owner.sub,
        query={"view": "needs_reply", "reason": "unassigned"},
    )
    assert (response.status, response.error_code) == (400, "QUEUE_VIEW_CONFLICT")
