"""Merging a duplicate into the survivor staff chose (spec 1, 4 "Merged", 8 "Duplicate lead during nurture"):
everything the duplicate owns moves, empty fields are filled, the survivor keeps one open follow-up task,
the duplicate's id answers with the survivor, and the merge is recorded with who, when and what moved."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from leadcrm.conversations.tables import lead_consents
from leadcrm.leads.tables import lead_receipts, lead_status_events, lead_tag_assignments
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.api import call_api, leads_path
from tests.support.deals_helpers import deal_row, open_deal
from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import consents_of, lead_tasks, put_follow_up
from tests.support.lead_moves_helpers import (
    activities,
    lead_row,
    make_converted,
    make_pipeline,
    outbox_events,
    patch_lead,
    placements,
    set_lead_columns,
)
from tests.support.qualification_helpers import lead_exists, merge, new_lead, read_lead
from tests.support.tickets_helpers import open_ticket, ticket_row


@pytest.fixture
def coach():
    return make_caller(role="coach")


def _follow_up(days: int) -> dict:
    return {"at": (datetime.now(UTC) + timedelta(days=days)).isoformat(), "type": "call"}


def _tag(caller, name: str) -> str:
    response = call_api("POST", f"{leads_path(caller.org_id)}/tags", sub=caller.sub, body={"name": name})
    assert response.status == 201, response.body
    return response.data["id"]


def _set_tags(caller, lead_id, *tag_ids: str) -> None:
    response = call_api(
        "PUT", leads_path(caller.org_id, lead_id) + "/tags", sub=caller.sub, body={"tagIds": list(tag_ids)}
    )
    assert response.status == 200, response.body


def _consent(org_id, lead_id, channel: str, status: str) -> None:
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_consents).values(
                id=uuid7(),
                organization_id=org_id,
                lead_id=uuid.UUID(str(lead_id)),
                channel=channel,
                status=status,
                source="test",
            )
        )


def _rows(table, lead_id) -> list[dict]:
    with get_engine().connect() as conn:
        return [
            dict(r) for r in conn.execute(select(table).where(table.c.lead_id == uuid.UUID(str(lead_id)))).mappings()
        ]


def test_merging_moves_the_duplicates_history_receipts_and_timeline_to_the_survivor(coach):
    survivor = new_lead(coach, name="Dana Cohen", email="dana@example.com")
    duplicate = new_lead(coach, name="Dana", phone="+1 555 0100 200")
    patch_lead(coach, duplicate["id"], {"status": "contacted"})
    duplicate_history = {e["id"] for e in _rows(lead_status_events, duplicate["id"])}
    duplicate_receipts = {r["id"] for r in _rows(lead_receipts, duplicate["id"])}

    response = merge(coach, survivor["id"], duplicate["id"])

    assert response.status == 200, response.body
    assert not lead_exists(duplicate["id"])
    assert duplicate_history <= {e["id"] for e in _rows(lead_status_events, survivor["id"])}
    assert duplicate_receipts <= {r["id"] for r in _rows(lead_receipts, survivor["id"])}
    assert response.data["moved"]["lead_status_events.lead_id"] == len(duplicate_history)


def test_empty_survivor_fields_are_filled_from_the_duplicate_and_nothing_is_overwritten(coach):
    survivor = new_lead(coach, name="Dana Cohen", email="dana@example.com")
    duplicate = new_lead(coach, name="Dana C.", email="other@example.com", phone="+1 555 0100 201")

    response = merge(coach, survivor["id"], duplicate["id"])

    row = lead_row(survivor["id"])
    assert (row["name"], row["email"], row["phone"]) == ("Dana Cohen", "dana@example.com", "+1 555 0100 201")
    assert response.data["filled"] == ["phone"]


def test_merging_leads_that_both_have_open_follow_up_tasks_leaves_the_survivor_one(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    assert put_follow_up(coach, survivor["id"], _follow_up(1)).status == 200
    assert put_follow_up(coach, duplicate["id"], _follow_up(3)).status == 200
    survivor_task = lead_tasks(survivor["id"], open_only=True)[0]
    duplicate_task = lead_tasks(duplicate["id"], open_only=True)[0]
    survivor_follow_up = lead_row(survivor["id"])["next_action_at"]

    assert merge(coach, survivor["id"], duplicate["id"]).status == 200

    tasks_now = {t["id"]: t for t in lead_tasks(survivor["id"])}
    assert [t["id"] for t in tasks_now.values() if t["status"] in ("pending", "in_progress")] == [survivor_task["id"]]
    assert tasks_now[duplicate_task["id"]]["status"] == "cancelled"  # moved too, as history
    assert lead_row(survivor["id"])["next_action_at"] == survivor_follow_up  # the survivor's follow-up stands


def test_a_survivor_without_a_follow_up_takes_the_duplicates_follow_up_and_its_task(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    put_follow_up(coach, duplicate["id"], _follow_up(2))
    duplicate_before = lead_row(duplicate["id"])
    (task,) = lead_tasks(duplicate["id"], open_only=True)

    merge(coach, survivor["id"], duplicate["id"])

    assert [t["id"] for t in lead_tasks(survivor["id"], open_only=True)] == [task["id"]]
    after = lead_row(survivor["id"])
    assert (after["next_action_at"], after["next_action_type"]) == (
        duplicate_before["next_action_at"],
        duplicate_before["next_action_type"],
    )


def test_tags_both_leads_carry_stay_once_and_the_others_move(coach):
    shared, only_duplicate = _tag(coach, "vip"), _tag(coach, "yoga")
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    _set_tags(coach, survivor["id"], shared)
    _set_tags(coach, duplicate["id"], shared, only_duplicate)

    assert merge(coach, survivor["id"], duplicate["id"]).status == 200

    assert {str(r["tag_id"]) for r in _rows(lead_tag_assignments, survivor["id"])} == {shared, only_duplicate}


def test_a_placement_in_a_pipeline_the_survivor_is_already_in_is_not_duplicated(coach):
    courses = make_pipeline(coach.org_id, name="Courses")
    workshops = make_pipeline(coach.org_id, name="Workshops")
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    for lead_id, pipeline in ((survivor["id"], courses), (duplicate["id"], courses), (duplicate["id"], workshops)):
        body = {"pipelineId": str(pipeline.id)}
        assert (
            call_api("POST", leads_path(coach.org_id, lead_id) + "/pipelines", sub=coach.sub, body=body).status == 201
        )

    assert merge(coach, survivor["id"], duplicate["id"]).status == 200

    assert set(placements(survivor["id"])) == {courses.id, workshops.id}


def test_a_revocation_on_the_duplicate_wins_over_a_grant_on_the_survivor(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    _consent(coach.org_id, survivor["id"], "email", "granted")
    _consent(coach.org_id, duplicate["id"], "email", "revoked")
    _consent(coach.org_id, duplicate["id"], "sms", "granted")

    merge(coach, survivor["id"], duplicate["id"])

    assert consents_of(survivor["id"]) == {"email": "revoked", "sms": "granted"}


def test_the_duplicates_id_answers_with_the_survivor(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]

    response = read_lead(coach, duplicate["id"])

    assert response.status == 200
    assert response.data["id"] == survivor["id"]
    assert response.body["meta"] == {
        "redirectedFrom": duplicate["id"],
        "mergeId": merge_id,
        "mergedAt": response.body["meta"]["mergedAt"],
    }


def test_a_plain_read_has_no_redirect(coach):
    lead = new_lead(coach, name="Dana Cohen")
    assert read_lead(coach, lead["id"]).body.get("meta") is None


def test_the_merged_lead_leaves_the_lists(coach):
    survivor = new_lead(coach, name="Zed Merged-List")
    duplicate = new_lead(coach, name="Zed Merged-List")
    merge(coach, survivor["id"], duplicate["id"])

    listed = call_api("GET", leads_path(coach.org_id), sub=coach.sub, query={"search": "Merged-List"})

    assert [lead["id"] for lead in listed.data] == [survivor["id"]]


def test_the_merge_is_recorded_with_who_when_and_the_moved_row_ids(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    duplicate_receipts = [str(r["id"]) for r in _rows(lead_receipts, duplicate["id"])]

    done = merge(coach, survivor["id"], duplicate["id"]).data

    recorded = call_api("GET", f"/organizations/{coach.org_id}/lead-merges/{done['mergeId']}", sub=coach.sub).data
    assert recorded["actorUserId"] == str(coach.user.id)
    assert recorded["mergedLeadId"] == duplicate["id"]
    assert recorded["survivorLeadId"] == survivor["id"]
    assert [row[0] for row in recorded["moved"]["lead_receipts.lead_id"]] == duplicate_receipts
    (entry,) = activities(survivor["id"], "lead_merged")
    assert entry["payload"]["mergedLeadId"] == duplicate["id"]
    assert entry["actor_user_id"] == coach.user.id
    listed = call_api("GET", leads_path(coach.org_id, survivor["id"]) + "/merges", sub=coach.sub).data
    assert [m["id"] for m in listed] == [done["mergeId"]]


def test_a_merge_across_organizations_is_not_found(coach):
    other = make_caller(role="coach")
    mine = new_lead(coach, name="Dana Cohen")
    theirs = new_lead(other, name="Dana Cohen")

    into_mine = merge(coach, mine["id"], theirs["id"])
    into_theirs = merge(coach, theirs["id"], mine["id"])

    assert (into_mine.status, into_mine.error_code) == (404, "LEAD_NOT_FOUND")
    assert (into_theirs.status, into_theirs.error_code) == (404, "LEAD_NOT_FOUND")
    assert lead_exists(mine["id"]) and lead_exists(theirs["id"])


def test_a_lead_is_not_merged_into_itself(coach):
    lead = new_lead(coach, name="Dana Cohen")
    response = merge(coach, lead["id"], lead["id"])
    assert (response.status, response.error_code) == (400, "MERGE_SAME_LEAD")


def test_a_converted_lead_is_never_merged_away(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    converted = new_lead(coach, name="Dana")
    make_converted(converted["id"], lead_row(converted["id"])["stage_id"])

    response = merge(coach, survivor["id"], converted["id"])

    assert (response.status, response.error_code) == (409, "MERGED_LEAD_CONVERTED")
    assert merge(coach, converted["id"], survivor["id"]).status == 200  # into it is fine


def test_members_cannot_merge():
    member = make_caller(role="member")
    staff = make_caller(role="coach", organization=member.organization)
    a, b = new_lead(staff, name="A"), new_lead(staff, name="B")
    assert merge(member, a["id"], b["id"]).status == 403


def test_a_nurtured_duplicate_keeps_its_nurture_on_a_survivor_without_qualification(coach):
    """Spec 8: if accepted, history transferred and nurture continues from the surviving record."""
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana")
    due = datetime.now(UTC) + timedelta(days=10)
    set_lead_columns(duplicate["id"], qualification_state="nurturing", reevaluate_at=due, nurture_score=20)

    merge(coach, survivor["id"], duplicate["id"])

    row = lead_row(survivor["id"])
    assert (row["qualification_state"], row["reevaluate_at"], row["nurture_score"]) == ("nurturing", due, 20)


def test_the_merge_event_carries_ids_only(coach):
    survivor = new_lead(coach, name="Dana Cohen", email="dana.event@example.com")
    duplicate = new_lead(coach, name="Dana", phone="+1 555 0100 299")
    merge(coach, survivor["id"], duplicate["id"])

    (event,) = outbox_events(survivor["id"], "lead.merged")
    assert set(event["payload"]) == {"leadId", "mergedLeadId", "mergeId", "actorUserId"}


def test_a_merge_moves_the_duplicates_deals_and_tickets(coach):
    survivor, duplicate = new_lead(coach, name="Dana Cohen"), new_lead(coach, name="Dana")
    deal = open_deal(coach, leadId=duplicate["id"])
    ticket = open_ticket(coach, {"subject": "Locker", "leadId": duplicate["id"]}).body["data"]

    moved = merge(coach, survivor["id"], duplicate["id"]).data["moved"]

    assert (moved["deals.lead_id"], moved["tickets.lead_id"]) == (1, 1)
    assert str(deal_row(deal["id"])["lead_id"]) == survivor["id"]
    assert str(ticket_row(ticket["id"])["lead_id"]) == survivor["id"]
