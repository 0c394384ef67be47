"""GET /organizations/{orgId}/leads/{leadId}: the lead, its pipelines, its tags and its unified timeline."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, update

from leadcrm.directory.tables import users
from leadcrm.leads.activity import record_activity
from leadcrm.leads.tables import lead_activity_events, lead_status_events
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.api import call_api, leads_path
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import Board, insert_lead, make_board, make_tag, place, tag

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
DETAIL_STATEMENTS = 2  # the caller with the lead, its pipelines and tags; the timeline


@pytest.fixture
def caller():
    caller = make_caller()
    with get_engine().begin() as conn:
        conn.execute(update(users).where(users.c.id == caller.user.id).values(first_name="Dana", last_name="Cohen"))
    return caller


@pytest.fixture
def board(caller):
    return make_board(caller.org_id, "Sales", default=True)


def _detail(caller, lead_id):
    response = call_api("GET", leads_path(caller.org_id, lead_id), sub=caller.sub)
    assert response.status == 200, response.body
    return response.data


def _status_event(board: Board, lead_id, at, from_category, to_category, actor=None, reason=None):
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_status_events).values(
                id=uuid7(),
                organization_id=board.organization_id,
                lead_id=lead_id,
                from_status=from_category,
                to_status=to_category,
                from_stage_id=board.stages.get(from_category) if from_category else None,
                to_stage_id=board.stages[to_category],
                actor_user_id=actor,
                reason=reason,
                changed_at=at,
            )
        )


def _activity(board: Board, lead_id, at, activity_type, actor=None, payload=None):
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_activity_events).values(
                id=uuid7(),
                organization_id=board.organization_id,
                lead_id=lead_id,
                type=activity_type,
                payload=payload or {},
                actor_user_id=actor,
                occurred_at=at,
            )
        )


# -- the lead and its pipelines ----------------------------------------------------------------------------


def test_the_detail_is_the_lead_with_its_fields(caller, board):
    lead_id = insert_lead(board, name="Ada Lovelace", email="ada@example.test", category="contacted")
    detail = _detail(caller, lead_id)
    assert (detail["id"], detail["name"], detail["email"], detail["status"]) == (
        str(lead_id),
        "Ada Lovelace",
        "ada@example.test",
        "contacted",
    )


def test_the_primary_pipeline_is_listed_with_its_names_and_category(caller, board):
    lead_id = insert_lead(board, category="contacted")
    assert _detail(caller, lead_id)["pipelines"] == [
        {
            "pipelineId": str(board.pipeline_id),
            "pipelineName": "Sales",
            "stageId": str(board.stages["contacted"]),
            "stageName": "contacted stage",
            "category": "contacted",
            "primary": True,
        }
    ]


def test_secondary_placements_follow_the_primary_one_and_are_not_primary(caller, board):
    courses = make_board(caller.org_id, "Courses", ("new", "customer", "lost"))
    events = make_board(caller.org_id, "Events", ("new", "trial_booked", "converted", "lost"))
    lead_id = insert_lead(board)
    place(events, lead_id, "trial_booked")
    place(courses, lead_id, "customer")
    pipelines = _detail(caller, lead_id)["pipelines"]
    assert [(p["pipelineName"], p["stageName"], p["category"], p["primary"]) for p in pipelines] == [
        ("Sales", "new stage", "new", True),
        ("Courses", "customer stage", "customer", False),
        ("Events", "trial_booked stage", "trial_booked", False),
    ]


def test_the_lead_carries_its_tags_by_category_then_name(caller, board):
    lead_id = insert_lead(board)
    course = make_tag(caller.org_id, "Pilates course", "purchase")
    vip, early = make_tag(caller.org_id, "VIP"), make_tag(caller.org_id, "early bird")
    tag(caller.org_id, lead_id, course, vip, early)
    assert [(t["name"], t["category"]) for t in _detail(caller, lead_id)["tags"]] == [
        ("early bird", "label"),
        ("VIP", "label"),
        ("Pilates course", "purchase"),
    ]


def test_an_untagged_lead_has_an_empty_tag_list(caller, board):
    assert _detail(caller, insert_lead(board))["tags"] == []


def test_an_archived_lead_can_still_be_read(caller, board):
    lead_id = insert_lead(board, archived=True)
    assert _detail(caller, lead_id)["archivedAt"] is not None


# -- the timeline ------------------------------------------------------------------------------------------


def test_the_timeline_merges_status_changes_and_activity_newest_first(caller, board):
    lead_id = insert_lead(board, category="contacted", created_at=T0)
    _status_event(board, lead_id, T0, None, "new")
    _activity(board, lead_id, T0 + timedelta(minutes=5), "note_added", caller.user.id)
    _status_event(board, lead_id, T0 + timedelta(minutes=10), "new", "contacted", caller.user.id)
    _activity(board, lead_id, T0 + timedelta(minutes=20), "owner_changed", caller.user.id)
    timeline = _detail(caller, lead_id)["timeline"]
    assert [(e["kind"], e["type"]) for e in timeline] == [
        ("activity", "owner_changed"),
        ("status_changed", "status_changed"),
        ("activity", "note_added"),
        ("status_changed", "status_changed"),
    ]


def test_timeline_entries_name_their_actor_from_the_users_first_and_last_name(caller, board):
    lead_id = insert_lead(board)
    _activity(board, lead_id, T0, "note_added", caller.user.id)
    [entry] = _detail(caller, lead_id)["timeline"]
    assert (entry["actorUserId"], entry["actorName"]) == (str(caller.user.id), "Dana Cohen")


def test_a_system_entry_has_no_actor_name(caller, board):
    lead_id = insert_lead(board)
    _status_event(board, lead_id, T0, None, "new", actor=None)
    [entry] = _detail(caller, lead_id)["timeline"]
    assert (entry["actorUserId"], entry["actorName"]) == (None, None)


def test_an_actor_with_only_a_first_name_is_named_by_it(caller, board):
    with get_engine().begin() as conn:
        conn.execute(update(users).where(users.c.id == caller.user.id).values(last_name=None))
    lead_id = insert_lead(board)
    _activity(board, lead_id, T0, "note_added", caller.user.id)
    assert _detail(caller, lead_id)["timeline"][0]["actorName"] == "Dana"


def test_a_status_entry_names_its_statuses_and_stages(caller, board):
    lead_id = insert_lead(board, category="lost")
    _status_event(board, lead_id, T0, "contacted", "lost", caller.user.id, reason="too_expensive")
    [entry] = _detail(caller, lead_id)["timeline"]
    assert {k: entry[k] for k in ("fromStatus", "toStatus", "fromStageName", "toStageName", "reason")} == {
        "fromStatus": "contacted",
        "toStatus": "lost",
        "fromStageName": "contacted stage",
        "toStageName": "lost stage",
        "reason": "too_expensive",
    }


def test_an_activity_entry_keeps_its_payload(caller, board):
    lead_id = insert_lead(board)
    with get_engine().begin() as conn:
        record_activity(conn, caller.org_id, lead_id, "primary_changed", {"pipelineId": "p-1"}, caller.user.id)
    [entry] = _detail(caller, lead_id)["timeline"]
    assert (entry["type"], entry["payload"]) == ("primary_changed", {"pipelineId": "p-1"})


def test_the_timeline_keeps_the_newest_100_entries(caller, board):
    lead_id = insert_lead(board)
    for i in range(60):
        _status_event(board, lead_id, T0 + timedelta(minutes=2 * i), "new", "contacted")
        _activity(board, lead_id, T0 + timedelta(minutes=2 * i + 1), "note_added")
    timeline = _detail(caller, lead_id)["timeline"]
    assert len(timeline) == 100
    stamps = [entry["at"] for entry in timeline]
    assert stamps == sorted(stamps, reverse=True)
    assert datetime.fromisoformat(stamps[-1].replace("Z", "+00:00")) == T0 + timedelta(minutes=20)


def test_another_leads_entries_are_not_on_the_timeline(caller, board):
    lead_id, other = insert_lead(board), insert_lead(board)
    _activity(board, other, T0, "note_added")
    assert _detail(caller, lead_id)["timeline"] == []


# -- not found and cost ------------------------------------------------------------------------------------


def test_another_organizations_lead_answers_exactly_like_a_missing_one(caller, board):
    stranger = make_caller()
    theirs = insert_lead(make_board(stranger.org_id))
    foreign = call_api("GET", leads_path(caller.org_id, theirs), sub=caller.sub)
    missing = call_api("GET", leads_path(caller.org_id, uuid.uuid4()), sub=caller.sub)
    assert (foreign.status, foreign.error_code) == (404, "LEAD_NOT_FOUND")
    assert (foreign.status, foreign.body) == (missing.status, missing.body)


def test_the_detail_costs_the_same_statements_with_a_long_history(caller, board):
    quiet = insert_lead(board)
    busy = insert_lead(board)
    courses = make_board(caller.org_id, "Courses", ("new", "customer", "lost"))
    place(courses, busy, "customer")
    tag(caller.org_id, busy, *(make_tag(caller.org_id, f"Tag {i}") for i in range(5)))
    for i in range(30):
        _status_event(board, busy, T0 + timedelta(minutes=i), "new", "contacted", caller.user.id)
        _activity(board, busy, T0 + timedelta(minutes=i), "note_added", caller.user.id)
    counts = []
    for lead_id in (quiet, busy):
        with count_statements(get_engine()) as log:
            _detail(caller, lead_id)
        counts.append(len(log))
    assert counts == [DETAIL_STATEMENTS, DETAIL_STATEMENTS]
