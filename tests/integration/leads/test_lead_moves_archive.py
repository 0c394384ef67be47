"""Archive and unarchive: a flag (archived_at), never a status; idempotent; one lead or many at once."""

from __future__ import annotations

import uuid

import pytest

from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import (
    activities,
    create_lead,
    default_pipeline,
    insert_leads,
    lead_row,
)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes lead.created after commit; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="coach")


@pytest.fixture
def lead(caller):
    return create_lead(caller)


def _archive(caller, lead_id, action="archive"):
    return call_api("POST", f"{leads_path(caller.org_id, lead_id)}/{action}", sub=caller.sub)


def _bulk(caller, lead_ids, archived=True):
    body = {"leadIds": [str(i) for i in lead_ids], "archived": archived}
    return call_api("POST", f"{leads_path(caller.org_id)}/bulk-archive", sub=caller.sub, body=body)


def test_archiving_sets_archived_at_and_keeps_the_status_and_stage(caller, lead):
    response = _archive(caller, lead["id"])
    assert response.status == 200, response.body
    assert response.data["archivedAt"] is not None
    assert (response.data["status"], response.data["stageId"]) == (lead["status"], lead["stageId"])


def test_archiving_is_on_the_timeline_with_the_actor(caller, lead):
    _archive(caller, lead["id"])
    (entry,) = activities(lead["id"], "archived")
    assert entry["actor_user_id"] == caller.user.id


def test_archiving_twice_changes_and_records_nothing_more(caller, lead):
    first = _archive(caller, lead["id"]).data
    second = _archive(caller, lead["id"])
    assert second.status == 200
    assert second.data["archivedAt"] == first["archivedAt"]
    assert len(activities(lead["id"], "archived")) == 1


def test_unarchiving_clears_the_flag_and_is_on_the_timeline(caller, lead):
    _archive(caller, lead["id"])
    response = _archive(caller, lead["id"], "unarchive")
    assert response.data["archivedAt"] is None
    assert len(activities(lead["id"], "unarchived")) == 1


def test_unarchiving_a_lead_that_is_not_archived_records_nothing(caller, lead):
    assert _archive(caller, lead["id"], "unarchive").status == 200
    assert activities(lead["id"]) == []


def test_archiving_a_lead_of_another_organization_is_a_404_like_a_random_id(caller):
    foreign = create_lead(make_caller())
    foreign_answer = _archive(caller, foreign["id"])
    random_answer = _archive(caller, uuid.uuid4())
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "LEAD_NOT_FOUND")
    assert foreign_answer.body == random_answer.body
    assert lead_row(foreign["id"])["archived_at"] is None


def test_bulk_archive_reports_changed_and_skipped_ids(caller):
    sales = default_pipeline(caller.org_id)
    fresh = insert_leads(caller.org_id, sales, 2)
    (already,) = insert_leads(caller.org_id, sales, 1)
    _archive(caller, already)
    foreign = create_lead(make_caller())["id"]
    unknown = str(uuid.uuid4())
    response = _bulk(caller, [*fresh, already, foreign, unknown])
    assert response.status == 200, response.body
    assert response.data["changed"] == [str(i) for i in fresh]
    assert {s["leadId"]: s["reason"] for s in response.data["skipped"]} == {
        str(already): "unchanged",
        foreign: "not_found",
        unknown: "not_found",
    }
    assert all(lead_row(i)["archived_at"] is not None for i in fresh)
    assert lead_row(foreign)["archived_at"] is None


def test_bulk_archive_records_one_timeline_entry_per_changed_lead(caller):
    ids = insert_leads(caller.org_id, default_pipeline(caller.org_id), 2)
    _bulk(caller, ids)
    for lead_id in ids:
        (entry,) = activities(lead_id, "archived")
        assert entry["actor_user_id"] == caller.user.id


def test_bulk_unarchive_reverses_it(caller):
    ids = insert_leads(caller.org_id, default_pipeline(caller.org_id), 2)
    _bulk(caller, ids)
    response = _bulk(caller, ids, archived=False)
    assert response.data["changed"] == [str(i) for i in ids]
    assert all(lead_row(i)["archived_at"] is None for i in ids)


def test_bulk_archive_keeps_statuses(caller):
    ids = insert_leads(caller.org_id, default_pipeline(caller.org_id), 1, category="contacted")
    _bulk(caller, ids)
    assert lead_row(ids[0])["status"] == "contacted"


def test_bulk_archive_costs_the_same_statements_for_3_or_60_leads(caller):
    sales = default_pipeline(caller.org_id)

    def run(count: int) -> int:
        ids = insert_leads(caller.org_id, sales, count)
        with count_statements(get_engine()) as log:
            assert _bulk(caller, ids).status == 200
        return len(log)

    assert run(3) == run(60)
