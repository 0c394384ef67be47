"""GET a lead with its timeline, and list leads newest first in keyset pages."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, update

from leadcrm.leads.tables import leads
from leadcrm.pipelines.tables import pipeline_stages
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes `lead.created`; the bus exists."""


def _create(caller, name="Ada Lovelace"):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": name})
    assert response.status == 201, response.body
    return response.data


def _get(caller, lead_id):
    return call_api("GET", leads_path(caller.org_id, lead_id), sub=caller.sub)


def _list(caller, **query):
    return call_api("GET", leads_path(caller.org_id), sub=caller.sub, query={k: str(v) for k, v in query.items()})


def _move_to(lead_id: str, category: str) -> None:
    """Put a lead on its pipeline's stage of `category` (the status moves are not built yet)."""
    with get_engine().begin() as conn:
        pipeline_id = conn.execute(select(leads.c.pipeline_id).where(leads.c.id == uuid.UUID(lead_id))).scalar_one()
        stage_id = conn.execute(
            select(pipeline_stages.c.id).where(
                pipeline_stages.c.pipeline_id == pipeline_id, pipeline_stages.c.category == category
            )
        ).scalar_one()
        conn.execute(update(leads).where(leads.c.id == uuid.UUID(lead_id)).values(status=category, stage_id=stage_id))


# -- one lead ---------------------------------------------------------------------------------------------


def test_a_lead_is_read_back_as_it_was_created():
    caller = make_caller()
    created = _create(caller)
    response = _get(caller, created["id"])
    assert response.status == 200
    read = response.data
    assert {k: v for k, v in read.items() if k not in {"timeline", "pipelines", "tags"}} == created


def test_a_new_leads_timeline_holds_its_status_change_to_new_by_the_creator():
    caller = make_caller()
    created = _create(caller)
    timeline = _get(caller, created["id"]).data["timeline"]
    assert len(timeline) == 1
    entry = timeline[0]
    assert entry["kind"] == "status_changed"
    assert entry["type"] == "status_changed"
    assert entry["fromStatus"] is None
    assert entry["toStatus"] == "new"
    assert entry["actorUserId"] == str(caller.user.id)


def test_another_organizations_lead_is_not_found_with_404_lead_not_found():
    owner_of_lead = make_caller()
    lead_id = _create(owner_of_lead)["id"]
    stranger = make_caller(role="owner")
    response = _get(stranger, lead_id)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_another_organizations_lead_answers_exactly_as_a_lead_that_does_not_exist():
    owner_of_lead = make_caller()
    lead_id = _create(owner_of_lead)["id"]
    stranger = make_caller()
    foreign = _get(stranger, lead_id)
    missing = _get(stranger, uuid7())
    assert (foreign.status, foreign.body) == (missing.status, missing.body)


@pytest.mark.parametrize("lead_id", ["not-a-uuid", "42", "' OR 1=1 --"])
def test_a_lead_id_that_is_not_a_uuid_is_not_found_with_404(lead_id):
    caller = make_caller()
    response = _get(caller, lead_id)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


# -- the list ---------------------------------------------------------------------------------------------


def test_the_list_is_newest_first():
    caller = make_caller()
    ids = [_create(caller, name=f"Lead {i}")["id"] for i in range(3)]
    response = _list(caller)
    assert response.status == 200
    assert [lead["id"] for lead in response.data] == list(reversed(ids))


def test_a_list_answers_data_and_next_cursor():
    caller = make_caller()
    _create(caller)
    assert set(_list(caller).body) == {"data", "nextCursor"}


def test_a_list_that_fits_one_page_has_no_next_cursor():
    caller = make_caller()
    _create(caller)
    assert _list(caller).body["nextCursor"] is None


def test_the_list_shows_only_the_callers_organization():
    caller = make_caller()
    mine = _create(caller)["id"]
    _create(make_caller())
    assert [lead["id"] for lead in _list(caller).data] == [mine]


def test_following_next_cursor_visits_every_lead_exactly_once_in_order():
    caller = make_caller()
    ids = [_create(caller, name=f"Lead {i}")["id"] for i in range(7)]
    seen: list[str] = []
    pages = 0
    cursor = None
    while True:
        query = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        response = _list(caller, **query)
        assert response.status == 200, response.body
        assert len(response.data) <= 3
        seen.extend(lead["id"] for lead in response.data)
        pages += 1
        cursor = response.body["nextCursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    assert pages == 3


def test_a_page_exactly_as_long_as_the_rest_has_no_next_cursor():
    caller = make_caller()
    for i in range(4):
        _create(caller, name=f"Lead {i}")
    first = _list(caller, limit=2)
    second = _list(caller, limit=2, cursor=first.body["nextCursor"])
    assert len(second.data) == 2
    assert second.body["nextCursor"] is None


def test_the_status_filter_lists_only_leads_in_that_status():
    caller = make_caller()
    new_lead = _create(caller, "Still new")["id"]
    contacted = _create(caller, "Reached")["id"]
    _move_to(contacted, "contacted")
    assert [lead["id"] for lead in _list(caller, status="contacted").data] == [contacted]
    assert [lead["id"] for lead in _list(caller, status="new").data] == [new_lead]


def test_an_unknown_status_filter_is_a_400():
    caller = make_caller()
    response = _list(caller, status="happy")
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


@pytest.mark.parametrize("cursor", ["garbage!", "AAAA", "x"])
def test_a_garbage_cursor_is_a_400_invalid_cursor(cursor):
    caller = make_caller()
    response = _list(caller, cursor=cursor)
    assert (response.status, response.error_code) == (400, "INVALID_CURSOR")


@pytest.mark.parametrize("limit", [0, 201, -1])
def test_a_limit_outside_1_to_200_is_a_400(limit):
    caller = make_caller()
    response = _list(caller, limit=limit)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_limit_that_is_not_a_number_is_a_400():
    caller = make_caller()
    assert _list(caller, limit="ten").status == 400


@pytest.mark.parametrize("limit", [1, 200])
def test_limits_of_1_and_200_are_accepted(limit):
    caller = make_caller()
    _create(caller)
    assert _list(caller, limit=limit).status == 200
