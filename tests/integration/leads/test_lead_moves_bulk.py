"""POST /organizations/{orgId}/leads/bulk-move-stage: set-based, through the same move rules, and it reports
every lead it skipped ("Bulk stage move honors the convert invariant")."""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import func, update

from leadcrm.directory.access import resolve_actor
from leadcrm.leads.bulk_moves import BulkMoveResult, bulk_move_stage
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import INLINE_PUBLISH_LIMIT, UnitOfWork
from leadcrm.platform.tables import outbox
from tests.support.api import call_api, leads_path
from tests.support.database import count_statements, engine_for
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import (
    activities,
    add_stage,
    create_lead,
    default_pipeline,
    insert_leads,
    lead_row,
    make_converted,
    make_pipeline,
    outbox_events,
    placements,
    status_events,
)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Moves publish lead.status_changed after commit; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="coach")


@pytest.fixture
def sales(caller):
    return default_pipeline(caller.org_id)


def _bulk(caller, stage_id, lead_ids, **extra):
    body = {"stageId": str(stage_id), "leadIds": [str(i) for i in lead_ids], **extra}
    return call_api("POST", f"{leads_path(caller.org_id)}/bulk-move-stage", sub=caller.sub, body=body)


def _skipped(response):
    return {item["leadId"]: item["reason"] for item in response.data["skipped"]}


def test_leads_on_the_pipeline_move_and_are_reported_as_moved(caller, sales):
    ids = insert_leads(caller.org_id, sales, 3)
    response = _bulk(caller, sales.stage("contacted"), ids)
    assert response.status == 200, response.body
    assert response.data == {"moved": [str(i) for i in ids], "skipped": []}
    for lead_id in ids:
        row = lead_row(lead_id)
        assert (row["stage_id"], row["status"]) == (sales.stage("contacted"), "contacted")


def test_a_bulk_move_bumps_status_changed_at_only_on_a_category_change(caller, sales):
    sales = add_stage(sales, caller.org_id, "new")
    (changing,) = insert_leads(caller.org_id, sales, 1)
    (same_category,) = insert_leads(caller.org_id, sales, 1)
    before = {i: lead_row(i)["status_changed_at"] for i in (changing, same_category)}
    _bulk(caller, sales.stage("new", 1), [same_category])
    _bulk(caller, sales.stage("contacted"), [changing])
    assert lead_row(same_category)["status_changed_at"] == before[same_category]
    assert lead_row(changing)["status_changed_at"] > before[changing]


def test_every_moved_lead_gets_a_status_event_and_a_stage_moved_entry_by_the_actor(caller, sales):
    ids = insert_leads(caller.org_id, sales, 2)
    _bulk(caller, sales.stage("callback"), ids)
    for lead_id in ids:
        (event,) = status_events(lead_id)
        assert (event["from_status"], event["to_status"]) == ("new", "callback")
        assert (event["from_stage_id"], event["to_stage_id"]) == (sales.stage("new"), sales.stage("callback"))
        assert event["actor_user_id"] == caller.user.id
        (entry,) = activities(lead_id, "stage_moved")
        assert entry["payload"]["toStageId"] == str(sales.stage("callback"))
        assert entry["payload"]["bulk"] is True
        assert entry["actor_user_id"] == caller.user.id


def test_a_primary_bulk_entry_carries_what_a_single_move_records_plus_bulk(caller, sales):
    (lead_id,) = insert_leads(caller.org_id, sales, 1)
    _bulk(caller, sales.stage("lost"), [lead_id], lostReason="Season over")
    (entry,) = activities(lead_id, "stage_moved")
    assert entry["payload"] == {
        "pipelineId": str(sales.id),
        "primary": True,
        "fromStageId": str(sales.stage("new")),
        "toStageId": str(sales.stage("lost")),
        "fromStatus": "new",
        "toStatus": "lost",
        "lostReason": "Season over",
        "bulk": True,
    }


def test_a_primary_bulk_entry_without_a_new_reason_names_none(caller, sales):
    (lead_id,) = insert_leads(caller.org_id, sales, 1)
    _bulk(caller, sales.stage("contacted"), [lead_id])
    (entry,) = activities(lead_id, "stage_moved")
    assert "lostReason" not in entry["payload"]
    (event,) = status_events(lead_id)
    assert event["reason"] is None


def test_lead_status_changed_is_written_only_for_category_changes(caller, sales):
    sales = add_stage(sales, caller.org_id, "contacted")
    (on_new,) = insert_leads(caller.org_id, sales, 1)
    (on_contacted,) = insert_leads(caller.org_id, sales, 1, category="contacted")
    _bulk(caller, sales.stage("contacted", 1), [on_new, on_contacted])
    (event,) = outbox_events(on_new)
    assert event["payload"]["leadId"] == str(on_new)
    assert (event["payload"]["fromStatus"], event["payload"]["toStatus"]) == ("new", "contacted")
    assert outbox_events(on_contacted) == []
    assert len(status_events(on_contacted)) == 1  # a same-category move is still in the history


def test_past_what_a_request_publishes_each_category_change_is_written_for_the_relay_in_the_same_shape(caller, sales):
    """More lead.status_changed than a request publishes itself: PostgreSQL builds the rows, each the event
    a single move writes (`status_changed_event`, ids only), with no attempt counted, so the relay sends
    them; nothing is published by the request."""
    ids = insert_leads(caller.org_id, sales, INLINE_PUBLISH_LIMIT + 10)
    published: list = []
    with UnitOfWork(publisher=published.extend) as uow:
        actor = resolve_actor(uow.connection, caller.sub, caller.org_id)
        bulk_move_stage(uow, actor, sales.stage("callback"), ids)
        uow.commit()
    assert published == []
    for lead_id in ids:
        (row,) = outbox_events(lead_id)
        assert row["payload"] == {
            "leadId": str(lead_id),
            "fromStatus": "new",
            "toStatus": "callback",
            "fromStageId": str(sales.stage("new")),
            "toStageId": str(sales.stage("callback")),
            "actorUserId": str(caller.user.id),
        }
        assert (row["organization_id"], row["attempts"], row["id"].version) == (caller.org_id, 0, 7)
    # Handed over, as the relay would: nothing left in the outbox for the relay tests to trip over.
    with get_engine().begin() as conn:
        conn.execute(update(outbox).where(outbox.c.aggregate_id.in_(ids)).values(published_at=func.now()))


def test_a_small_bulk_move_publishes_its_events_itself_in_request_order(caller, sales):
    (on_new,) = insert_leads(caller.org_id, sales, 1)
    (on_contacted,) = insert_leads(caller.org_id, sales, 1, category="contacted")
    published: list = []
    with UnitOfWork(publisher=published.extend) as uow:
        actor = resolve_actor(uow.connection, caller.sub, caller.org_id)
        bulk_move_stage(uow, actor, sales.stage("callback"), [on_contacted, on_new])
        uow.commit()
    assert [(event.type, event.aggregate_id) for event in published] == [
        ("lead.status_changed", on_contacted),
        ("lead.status_changed", on_new),
    ]
    assert [outbox_events(i)[0]["attempts"] for i in (on_contacted, on_new)] == [1, 1]


def test_leads_on_different_stages_each_record_where_they_came_from(caller, sales):
    (on_new,) = insert_leads(caller.org_id, sales, 1)
    (on_contacted,) = insert_leads(caller.org_id, sales, 1, category="contacted")
    response = _bulk(caller, sales.stage("callback"), [on_contacted, on_new])
    assert response.data["moved"] == [str(on_contacted), str(on_new)]
    assert status_events(on_new)[0]["from_stage_id"] == sales.stage("new")
    assert status_events(on_contacted)[0]["from_stage_id"] == sales.stage("contacted")
    assert activities(on_contacted, "stage_moved")[0]["payload"]["fromStatus"] == "contacted"


def test_unconverted_leads_aimed_at_a_converted_stage_are_skipped_and_reported(caller, sales):
    unconverted = insert_leads(caller.org_id, sales, 2)
    (converted,) = insert_leads(caller.org_id, sales, 1)
    sales = add_stage(sales, caller.org_id, "converted")
    make_converted(converted, sales.stage("converted"))
    response = _bulk(caller, sales.stage("converted", 1), [*unconverted, converted])
    assert response.data["moved"] == [str(converted)]
    assert _skipped(response) == {str(i): "convert_required" for i in unconverted}
    assert all(lead_row(i)["status"] == "new" for i in unconverted)


def test_leads_not_in_the_pipeline_are_skipped_as_not_in_pipeline(caller, sales):
    courses = make_pipeline(caller.org_id)
    (elsewhere,) = insert_leads(caller.org_id, sales, 1)
    response = _bulk(caller, courses.stage("contacted"), [elsewhere])
    assert response.data == {"moved": [], "skipped": [{"leadId": str(elsewhere), "reason": "not_in_pipeline"}]}
    assert placements(elsewhere) == {}  # never silently added


def test_unknown_ids_and_leads_of_another_organization_are_skipped_as_not_found(caller, sales):
    other = make_caller()
    foreign = create_lead(other)["id"]
    unknown = str(uuid.uuid4())
    response = _bulk(caller, sales.stage("contacted"), [foreign, unknown])
    assert _skipped(response) == {foreign: "not_found", unknown: "not_found"}
    assert lead_row(foreign)["status"] == "new"


def test_secondary_placements_in_the_pipeline_move_without_touching_the_status(caller, sales):
    courses = make_pipeline(caller.org_id)
    (lead_id,) = insert_leads(caller.org_id, sales, 1)
    added = call_api(
        "POST",
        f"{leads_path(caller.org_id, lead_id)}/pipelines",
        sub=caller.sub,
        body={"pipelineId": str(courses.id)},
    )
    assert added.status == 201
    response = _bulk(caller, courses.stage("trial_booked"), [lead_id])
    assert response.data["moved"] == [str(lead_id)]
    assert placements(lead_id) == {courses.id: courses.stage("trial_booked")}
    assert lead_row(lead_id)["status"] == "new"
    assert outbox_events(lead_id) == []
    (entry,) = activities(lead_id, "stage_moved")
    assert entry["payload"] == {
        "pipelineId": str(courses.id),
        "primary": False,
        "fromStageId": str(courses.stage("new")),
        "toStageId": str(courses.stage("trial_booked")),
        "toCategory": "trial_booked",
        "bulk": True,
    }


def test_moved_and_skipped_leads_are_reported_in_request_order_whatever_group_they_fall_in(caller, sales):
    """The leads are decided in groups of leads that stand alike; the answer still follows the request."""
    courses = make_pipeline(caller.org_id)
    (on_new, on_new_too) = insert_leads(caller.org_id, courses, 2)
    (on_contacted,) = insert_leads(caller.org_id, courses, 1, category="contacted")
    (already_there,) = insert_leads(caller.org_id, courses, 1, category="callback")
    (elsewhere, secondary) = insert_leads(caller.org_id, sales, 2)
    added = call_api(
        "POST",
        f"{leads_path(caller.org_id, secondary)}/pipelines",
        sub=caller.sub,
        body={"pipelineId": str(courses.id)},
    )
    assert added.status == 201
    unknown = uuid.uuid4()
    request = [on_new, elsewhere, already_there, unknown, on_contacted, secondary, on_new_too]
    response = _bulk(caller, courses.stage("callback"), request)
    assert response.data["moved"] == [str(i) for i in (on_new, already_there, on_contacted, secondary, on_new_too)]
    assert response.data["skipped"] == [
        {"leadId": str(elsewhere), "reason": "not_in_pipeline"},
        {"leadId": str(unknown), "reason": "not_found"},
    ]
    assert [len(status_events(i)) for i in (on_new, on_new_too, on_contacted, already_there)] == [1, 1, 1, 0]


def test_leads_already_on_the_stage_count_as_moved_and_record_nothing(caller, sales):
    (lead_id,) = insert_leads(caller.org_id, sales, 1)
    response = _bulk(caller, sales.stage("new"), [lead_id])
    assert response.data == {"moved": [str(lead_id)], "skipped": []}
    assert status_events(lead_id) == []
    assert activities(lead_id) == []


def test_a_repeated_id_is_moved_and_reported_once(caller, sales):
    (lead_id,) = insert_leads(caller.org_id, sales, 1)
    response = _bulk(caller, sales.stage("contacted"), [lead_id, lead_id])
    assert response.data["moved"] == [str(lead_id)]
    assert len(status_events(lead_id)) == 1


def test_a_bulk_move_into_lost_needs_a_lost_reason(caller, sales):
    ids = insert_leads(caller.org_id, sales, 2)
    refused = _bulk(caller, sales.stage("lost"), ids)
    assert (refused.status, refused.error_code) == (400, "LOST_REASON_REQUIRED")
    accepted = _bulk(caller, sales.stage("lost"), ids, lostReason="Season over")
    assert accepted.status == 200
    for lead_id in ids:
        assert (lead_row(lead_id)["status"], lead_row(lead_id)["lost_reason"]) == ("lost", "Season over")
        assert status_events(lead_id)[-1]["reason"] == "Season over"


def test_lost_leads_moving_between_lost_stages_keep_their_own_reason(caller, sales):
    sales = add_stage(sales, caller.org_id, "lost")
    (lead_id,) = insert_leads(caller.org_id, sales, 1)
    _bulk(caller, sales.stage("lost"), [lead_id], lostReason="Too far")
    assert _bulk(caller, sales.stage("lost", 1), [lead_id]).status == 200
    assert lead_row(lead_id)["lost_reason"] == "Too far"


def test_lost_leads_moving_together_between_lost_stages_each_keep_their_own_reason(caller, sales):
    sales = add_stage(sales, caller.org_id, "lost")
    (too_far,) = insert_leads(caller.org_id, sales, 1)
    (season_over,) = insert_leads(caller.org_id, sales, 1)
    _bulk(caller, sales.stage("lost"), [too_far], lostReason="Too far")
    _bulk(caller, sales.stage("lost"), [season_over], lostReason="Season over")
    assert _bulk(caller, sales.stage("lost", 1), [too_far, season_over]).status == 200
    assert (lead_row(too_far)["lost_reason"], lead_row(season_over)["lost_reason"]) == ("Too far", "Season over")


def test_leaving_lost_in_bulk_clears_the_lost_reason(caller, sales):
    (lead_id,) = insert_leads(caller.org_id, sales, 1)
    _bulk(caller, sales.stage("lost"), [lead_id], lostReason="Too far")
    _bulk(caller, sales.stage("contacted"), [lead_id])
    assert lead_row(lead_id)["lost_reason"] is None


def test_a_lost_reason_for_a_stage_that_is_not_lost_is_a_400(caller, sales):
    ids = insert_leads(caller.org_id, sales, 1)
    response = _bulk(caller, sales.stage("contacted"), ids, lostReason="Too far")
    assert (response.status, response.error_code) == (400, "LOST_REASON_NOT_LOST")


def test_an_archived_target_stage_is_a_400(caller, sales):
    sales = add_stage(sales, caller.org_id, "contacted", archived=True)
    ids = insert_leads(caller.org_id, sales, 1)
    response = _bulk(caller, sales.stage("contacted", 1), ids)
    assert (response.status, response.error_code) == (400, "STAGE_ARCHIVED")


def test_a_target_stage_of_another_organization_is_a_404_like_a_random_one(caller, sales):
    ids = insert_leads(caller.org_id, sales, 1)
    foreign = default_pipeline(make_caller().org_id)
    foreign_answer = _bulk(caller, foreign.stage("contacted"), ids)
    random_answer = _bulk(caller, uuid.uuid4(), ids)
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "STAGE_NOT_FOUND")
    assert foreign_answer.body == random_answer.body


def test_the_statement_count_does_not_grow_with_the_number_of_leads(caller, sales):
    """Primary moves, secondary placement moves, skips and events: the same statements for 60 leads or 180.

    Both sizes produce more events than a request publishes itself (INLINE_PUBLISH_LIMIT), so neither
    pays for publishing; a small move that does publish costs one statement more, whatever its size."""
    courses = make_pipeline(caller.org_id)

    def run(count: int) -> int:
        primary = insert_leads(caller.org_id, courses, count)
        secondary = insert_leads(caller.org_id, sales, count)
        for lead_id in secondary:
            call_api(
                "POST",
                f"{leads_path(caller.org_id, lead_id)}/pipelines",
                sub=caller.sub,
                body={"pipelineId": str(courses.id)},
            )
        outsiders = insert_leads(caller.org_id, sales, count)
        with count_statements(get_engine()) as log:
            response = _bulk(caller, courses.stage("contacted"), [*primary, *secondary, *outsiders])
        assert response.status == 200
        assert len(response.data["moved"]) == 2 * count
        assert len(response.data["skipped"]) == count
        print(f"\n[sql] bulk move of {3 * count} leads: {len(log)} statements\n{log.describe()}")
        return len(log)

    assert run(60) == run(180)


def test_the_service_is_callable_with_the_bench_signature(caller, sales):
    ids = insert_leads(caller.org_id, sales, 2)
    with UnitOfWork() as uow:
        actor = resolve_actor(uow.connection, caller.sub, caller.org_id)
        result = bulk_move_stage(uow, actor, sales.stage("contacted"), ids)
        uow.commit()
    assert isinstance(result, BulkMoveResult)
    assert result.moved == ids
    assert result.skipped == []


def test_concurrent_bulk_moves_over_the_same_leads_in_opposite_orders_both_finish(caller, sales, database_url):
    """Rows are locked in id order, whatever the order of the request: no deadlock."""
    # Same-category moves: nothing is left in the outbox for the relay tests to trip over.
    sales = add_stage(add_stage(sales, caller.org_id, "contacted"), caller.org_id, "contacted")
    ids = insert_leads(caller.org_id, sales, 200, category="contacted")
    targets = [sales.stage("contacted", 1), sales.stage("contacted", 2)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def move(stage_id: uuid.UUID, lead_ids: list[uuid.UUID]) -> None:
        engine = engine_for(database_url)
        try:
            barrier.wait()
            with UnitOfWork(engine, publisher=lambda events: None) as uow:
                actor = resolve_actor(uow.connection, caller.sub, caller.org_id)
                bulk_move_stage(uow, actor, stage_id, lead_ids)
                uow.commit()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            engine.dispose()

    threads = [
        threading.Thread(target=move, args=(targets[0], ids)),
        threading.Thread(target=move, args=(targets[1], list(reversed(ids)))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    final = {lead_row(i)["stage_id"] for i in ids}
    assert len(final) == 1 and final <= set(targets)  # one request ran after the other
