"""Undoing a merge within 7 days restores both leads as they were; records that reached the survivor since the
merge stay with it and are reported."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, insert, select, update

from leadcrm.leads.tables import (
    lead_activity_events,
    lead_campaigns,
    lead_receipts,
    lead_status_events,
    lead_tag_assignments,
    leads,
)
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.qualification.jobs import purge_expired_snapshots
from leadcrm.qualification.tables import lead_merges
from tests.support.api import call_api, leads_path
from tests.support.concurrency import run_together
from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import lead_tasks, put_follow_up
from tests.support.lead_moves_helpers import lead_row, patch_lead
from tests.support.qualification_helpers import lead_exists, merge, merge_row, new_lead, read_lead, undo

# What an undo must give back exactly (updated_at moves with every write, and phone_digits follows phone).
_COMPARED = ("name", "email", "phone", "note", "status", "stage_id", "next_action_at", "next_action_type")


@pytest.fixture
def coach():
    return make_caller(role="coach")


def _ids(table, lead_id) -> set[uuid.UUID]:
    with get_engine().connect() as conn:
        return set(conn.execute(select(table.c.id).where(table.c.lead_id == uuid.UUID(str(lead_id)))).scalars())


def _tag_ids(lead_id) -> set[uuid.UUID]:
    with get_engine().connect() as conn:
        return set(
            conn.execute(
                select(lead_tag_assignments.c.tag_id).where(lead_tag_assignments.c.lead_id == uuid.UUID(str(lead_id)))
            ).scalars()
        )


def _state(lead_id) -> dict:
    row = lead_row(lead_id)
    return {
        "row": {c: row[c] for c in _COMPARED},
        "events": _ids(lead_status_events, lead_id),
        "receipts": _ids(lead_receipts, lead_id),
        "activities": _ids(lead_activity_events, lead_id),
        "tags": _tag_ids(lead_id),
        "tasks": {(t["id"], t["status"]) for t in lead_tasks(lead_id)},
    }


def _follow_up(days: int) -> dict:
    return {"at": (datetime.now(UTC) + timedelta(days=days)).isoformat(), "type": "call"}


def _two_leads_with_history(caller) -> tuple[dict, dict]:
    tag = call_api("POST", f"{leads_path(caller.org_id)}/tags", sub=caller.sub, body={"name": "vip"}).data["id"]
    survivor = new_lead(caller, name="Dana Cohen", email="dana.undo@example.com")
    duplicate = new_lead(caller, name="Dana", phone="+1 555 0100 300")
    patch_lead(caller, duplicate["id"], {"status": "contacted", "note": "asked about prices"})
    for lead in (survivor, duplicate):
        put_follow_up(caller, lead["id"], _follow_up(2))
        call_api("PUT", leads_path(caller.org_id, lead["id"]) + "/tags", sub=caller.sub, body={"tagIds": [tag]})
    return survivor, duplicate


def test_undoing_a_merge_restores_both_leads_as_they_were(coach):
    survivor, duplicate = _two_leads_with_history(coach)
    before = {lead["id"]: _state(lead["id"]) for lead in (survivor, duplicate)}
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]

    response = undo(coach, merge_id)

    assert response.status == 200, response.body
    assert response.data["restoredId"] == duplicate["id"]
    for lead in (survivor, duplicate):
        after = _state(lead["id"])
        undo_entries = {a for a in after["activities"] - before[lead["id"]]["activities"]}
        assert {**after, "activities": after["activities"] - undo_entries} == before[lead["id"]]
    assert read_lead(coach, duplicate["id"]).data["id"] == duplicate["id"]  # no redirect any more


def test_records_that_reached_the_survivor_since_the_merge_stay_and_are_reported(coach):
    survivor, duplicate = _two_leads_with_history(coach)
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]
    patch_lead(coach, survivor["id"], {"status": "callback"})  # a status event after the merge
    (new_event,) = (
        _ids(lead_status_events, survivor["id"])
        - {uuid.UUID(row[0]) for row in merge_row(merge_id)["survivor_rows"]["lead_status_events.lead_id"]}
        - {uuid.UUID(row[0]) for row in merge_row(merge_id)["moved"]["lead_status_events.lead_id"]["rows"]}
    )

    report = undo(coach, merge_id).data["report"]

    assert report["stayedWithSurvivor"]["lead_status_events.lead_id"] == [[str(new_event)]]
    assert new_event in _ids(lead_status_events, survivor["id"])


def test_moved_rows_deleted_since_the_merge_are_reported_missing(coach):
    survivor, duplicate = _two_leads_with_history(coach)
    (receipt,) = _ids(lead_receipts, duplicate["id"])
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]
    with get_engine().begin() as conn:
        conn.execute(lead_receipts.delete().where(lead_receipts.c.id == receipt))

    report = undo(coach, merge_id).data["report"]

    assert report["missing"]["lead_receipts.lead_id"] == [[str(receipt)]]


def test_a_filled_field_edited_since_the_merge_keeps_the_edit(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana", email="dana.fill@example.com")
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]
    patch_lead(coach, survivor["id"], {"email": "dana.new@example.com"})

    report = undo(coach, merge_id).data["report"]

    assert report["keptSurvivorColumns"] == ["email"]
    assert lead_row(survivor["id"])["email"] == "dana.new@example.com"
    assert lead_row(duplicate["id"])["email"] == "dana.fill@example.com"


def test_an_unchanged_filled_field_goes_back_to_empty(coach):
    survivor = new_lead(coach, name="Dana Cohen")
    duplicate = new_lead(coach, name="Dana", email="dana.back@example.com")
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]

    undo(coach, merge_id)

    assert lead_row(survivor["id"])["email"] is None


def test_a_merge_is_undone_only_once(coach):
    survivor, duplicate = new_lead(coach, name="A"), new_lead(coach, name="B")
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]
    assert undo(coach, merge_id).status == 200

    again = undo(coach, merge_id)

    assert (again.status, again.error_code) == (409, "MERGE_ALREADY_UNDONE")


def test_a_merge_older_than_7_days_cannot_be_undone(coach):
    survivor, duplicate = new_lead(coach, name="A"), new_lead(coach, name="B")
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]
    with get_engine().begin() as conn:
        conn.execute(
            update(lead_merges)
            .where(lead_merges.c.id == uuid.UUID(merge_id))
            .values(merged_at=datetime.now(UTC) - timedelta(days=7, minutes=1))
        )

    response = undo(coach, merge_id)

    assert (response.status, response.error_code) == (409, "MERGE_UNDO_WINDOW_PASSED")
    assert not lead_exists(duplicate["id"])


def test_when_the_survivor_was_merged_since_the_later_merge_is_undone_first(coach):
    a, b, c = new_lead(coach, name="A"), new_lead(coach, name="B"), new_lead(coach, name="C")
    first = merge(coach, b["id"], a["id"]).data["mergeId"]
    second = merge(coach, c["id"], b["id"]).data["mergeId"]

    assert read_lead(coach, a["id"]).data["id"] == c["id"]  # the tombstone moved on with b's rows
    refused = undo(coach, first)
    assert (refused.status, refused.error_code) == (409, "SURVIVOR_MERGED_SINCE")
    assert undo(coach, second).status == 200
    assert undo(coach, first).status == 200
    assert all(lead_exists(lead["id"]) for lead in (a, b, c))


def test_a_merge_of_another_organization_is_not_found(coach):
    other = make_caller(role="coach")
    survivor, duplicate = new_lead(other, name="A"), new_lead(other, name="B")
    merge_id = merge(other, survivor["id"], duplicate["id"]).data["mergeId"]

    response = undo(coach, merge_id)

    assert (response.status, response.error_code) == (404, "MERGE_NOT_FOUND")
    assert call_api("GET", f"/organizations/{coach.org_id}/lead-merges/{merge_id}", sub=coach.sub).status == 404


def test_two_opposite_merges_of_the_same_pair_at_once_leave_one_merge(coach):
    a, b = new_lead(coach, name="Dana A"), new_lead(coach, name="Dana B")

    results, errors = run_together([lambda: merge(coach, a["id"], b["id"]), lambda: merge(coach, b["id"], a["id"])])

    assert errors == [None, None]
    assert sorted(r.status for r in results) == [200, 404]
    assert lead_exists(a["id"]) != lead_exists(b["id"])
    with get_engine().connect() as conn:
        org_leads = conn.execute(select(leads.c.id).where(leads.c.organization_id == coach.org_id)).all()
    assert len(org_leads) == 1


def test_an_undo_right_after_the_merge_reports_nothing_left_behind(coach):
    survivor, duplicate = _two_leads_with_history(coach)
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]

    report = undo(coach, merge_id).data["report"]

    assert report == {
        "stayedWithSurvivor": {},
        "missing": {},
        "keptSurvivorColumns": [],
        "notRestored": [],
        "clearedReferences": [],
    }


def test_the_snapshot_of_a_merge_past_its_window_is_purged_and_the_tombstone_stays(coach):
    survivor = new_lead(coach, name="A")
    old, recent = new_lead(coach, name="Dana Purged"), new_lead(coach, name="B")
    old_merge = merge(coach, survivor["id"], old["id"]).data["mergeId"]
    recent_merge = merge(coach, survivor["id"], recent["id"]).data["mergeId"]
    with get_engine().begin() as conn:
        conn.execute(
            update(lead_merges)
            .where(lead_merges.c.id == uuid.UUID(old_merge))
            .values(merged_at=datetime.now(UTC) - timedelta(days=8))
        )

    purge_expired_snapshots()

    assert merge_row(old_merge)["snapshot"] is None
    assert merge_row(recent_merge)["snapshot"] is not None
    assert read_lead(coach, old["id"]).data["id"] == survivor["id"]


def test_a_campaign_deleted_since_the_merge_is_cleared_on_the_restored_lead(coach):
    campaign_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(insert(lead_campaigns).values(id=campaign_id, organization_id=coach.org_id, name="Spring"))
    survivor = new_lead(coach, name="A")
    duplicate = new_lead(coach, name="B", campaignId=str(campaign_id))
    merge_id = merge(coach, survivor["id"], duplicate["id"]).data["mergeId"]
    with get_engine().begin() as conn:
        conn.execute(delete(lead_campaigns).where(lead_campaigns.c.id == campaign_id))

    response = undo(coach, merge_id)

    assert response.status == 200, response.body
    assert response.data["report"]["clearedReferences"] == ["campaign_id"]
    assert lead_row(duplicate["id"])["campaign_id"] is None
