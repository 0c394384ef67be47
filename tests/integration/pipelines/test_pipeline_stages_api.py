"""Stages API (owner/admin write): add, edit, reorder and archive stages. Every pipeline keeps an active new,
lost and win (converted or customer) stage; a stage holding leads keeps its category and cannot be archived.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select, update

from leadcrm.leads.tables import leads
from leadcrm.pipelines.tables import pipeline_stages
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.pipelines_helpers import (
    COURSE_FUNNEL,
    add_stage,
    archive_stage,
    categories_of,
    create_lead,
    create_pipeline,
    default_pipeline,
    get_pipeline,
    names_of,
    ok,
    place_lead,
    stage_of,
    stages_path,
)

# -- POST /pipelines/{id}/stages --------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("with_event_bus")


def test_a_stage_without_a_position_is_added_last(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    added = add_stage(owner, courses["id"], "Paused", "frozen")
    assert added["position"] == 4
    assert added["category"] == "frozen"
    assert added["archivedAt"] is None
    assert ok(get_pipeline(owner, courses["id"]))["stages"][-1] == added


def test_a_stage_at_a_position_is_inserted_there_and_later_stages_shift(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    added = add_stage(owner, courses["id"], "Trial", "trial_booked", position=2)
    assert added["position"] == 2
    read = ok(get_pipeline(owner, courses["id"]))
    assert names_of(read) == ["Enquiry", "Called", "Trial", "Bought", "Dropped"]
    assert [s["position"] for s in read["stages"]] == [0, 1, 2, 3, 4]


def test_a_stage_at_position_zero_goes_first(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    add_stage(owner, courses["id"], "Walk-in", "new", position=0)
    assert names_of(ok(get_pipeline(owner, courses["id"])))[:2] == ["Walk-in", "Enquiry"]


def test_a_position_counts_active_stages_only(owner):
    courses = create_pipeline(owner, "Courses", [*COURSE_FUNNEL, {"name": "Paused", "category": "frozen"}])
    ok(archive_stage(owner, courses["id"], stage_of(courses, "contacted")["id"]))
    add_stage(owner, courses["id"], "Booked", "trial_booked", position=1)
    assert names_of(ok(get_pipeline(owner, courses["id"]))) == ["Enquiry", "Booked", "Bought", "Dropped", "Paused"]


def test_a_position_past_the_end_is_a_400(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    response = call_api(
        "POST",
        stages_path(owner.org_id, courses["id"]),
        sub=owner.sub,
        body={"name": "Far", "category": "frozen", "position": 5},
    )
    assert response.status == 400
    assert response.error_code == "STAGE_POSITION_OUT_OF_RANGE"
    assert response.body["error"]["maxPosition"] == 4


def test_a_pipeline_at_its_stage_limit_takes_no_more_stages(owner, monkeypatch):
    from leadcrm.pipelines import editing as service

    monkeypatch.setattr(service, "MAX_STAGES_PER_PIPELINE", 4)
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    response = call_api(
        "POST", stages_path(owner.org_id, courses["id"]), sub=owner.sub, body={"name": "One more", "category": "new"}
    )
    assert response.status == 400
    assert response.error_code == "PIPELINE_STAGE_LIMIT"


def test_a_stage_cannot_be_added_to_another_organizations_pipeline(owner):
    theirs = create_pipeline(make_caller(role="owner"))
    response = call_api(
        "POST", stages_path(owner.org_id, theirs["id"]), sub=owner.sub, body={"name": "X", "category": "new"}
    )
    assert response.status == 404
    assert response.error_code == "PIPELINE_NOT_FOUND"


@pytest.mark.parametrize(
    "body",
    [
        {"name": "X"},
        {"category": "new"},
        {"name": "", "category": "new"},
        {"name": "x" * 101, "category": "new"},
        {"name": "X", "category": "won"},
        {"name": "X", "category": "new", "position": -1},
        {"name": "X", "category": "new", "position": "1"},
        {"name": "X", "category": "new", "position": True},
        {"name": "X", "category": "new", "position": 1.5},
        {"name": "X", "category": "new", "position": 10**12},
        {"name": "X", "category": "new", "pipelineId": str(uuid.uuid4())},
    ],
)
def test_a_malformed_new_stage_is_a_400_and_adds_nothing(owner, body):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    response = call_api("POST", stages_path(owner.org_id, courses["id"]), sub=owner.sub, body=body)
    assert response.status == 400, response.body
    assert response.error_code == "VALIDATION_FAILED"
    assert len(ok(get_pipeline(owner, courses["id"]))["stages"]) == 4


# -- PATCH /pipelines/{id}/stages/{stageId} ---------------------------------------------------------------


def _patch_stage(caller, pipeline_id, stage_id, body):
    return call_api("PATCH", stages_path(caller.org_id, pipeline_id, stage_id), sub=caller.sub, body=body)


def test_a_stage_is_renamed(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    called = stage_of(courses, "contacted")
    renamed = ok(_patch_stage(owner, courses["id"], called["id"], {"name": "Phoned"}))
    assert renamed == {**called, "name": "Phoned"}


def test_a_stage_holding_leads_may_be_renamed(owner):
    create_lead(owner)
    default = default_pipeline(owner)
    new = stage_of(default, "new")
    assert ok(_patch_stage(owner, default["id"], new["id"], {"name": "Fresh"}))["name"] == "Fresh"


def test_an_empty_stage_changes_category_when_coverage_holds(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    called = stage_of(courses, "contacted")
    changed = ok(_patch_stage(owner, courses["id"], called["id"], {"category": "callback", "name": "Call back"}))
    assert (changed["category"], changed["name"]) == ("callback", "Call back")
    assert stage_of(ok(get_pipeline(owner, courses["id"])), "callback")["id"] == called["id"]


@pytest.mark.parametrize(("before", "after"), [("customer", "converted"), ("converted", "customer")])
def test_the_last_win_stage_may_flip_between_the_two_flavours(owner, before, after):
    stages = [{"name": "N", "category": "new"}, {"name": "W", "category": before}, {"name": "L", "category": "lost"}]
    created = create_pipeline(owner, "Flip", stages)
    win = stage_of(created, before)
    assert ok(_patch_stage(owner, created["id"], win["id"], {"category": after}))["category"] == after


@pytest.mark.parametrize(
    ("category", "to", "missing"),
    [("customer", "contacted", ["win"]), ("lost", "frozen", ["lost"]), ("new", "contacted", ["new"])],
)
def test_a_category_change_that_breaks_win_coverage_is_a_400(owner, category, to, missing):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    stage = stage_of(courses, category)
    response = _patch_stage(owner, courses["id"], stage["id"], {"category": to})
    assert response.status == 400
    assert response.error_code == "PIPELINE_WIN_COVERAGE"
    assert response.body["error"]["missing"] == missing
    assert stage_of(ok(get_pipeline(owner, courses["id"])), category)["id"] == stage["id"]


def test_a_category_change_of_a_stage_holding_leads_is_a_409_with_the_count_and_the_leads_keep_their_status(owner):
    first, second = create_lead(owner, "Ada"), create_lead(owner, "Grace")
    default = default_pipeline(owner)
    add_stage(owner, default["id"], "Walk-in", "new")  # coverage would hold without the leads' stage
    new = stage_of(default, "new")
    response = _patch_stage(owner, default["id"], new["id"], {"category": "contacted"})
    assert response.status == 409
    assert response.error_code == "STAGE_HAS_LEADS"
    assert response.body["error"]["leadCount"] == 2
    assert stage_of(default_pipeline(owner), "new")["id"] == new["id"]
    with get_engine().connect() as conn:
        statuses = (
            conn.execute(
                select(leads.c.status).where(leads.c.id.in_([uuid.UUID(first["id"]), uuid.UUID(second["id"])]))
            )
            .scalars()
            .all()
        )
    assert statuses == ["new", "new"]


def test_setting_the_category_a_stage_already_has_is_no_change_even_with_leads(owner):
    create_lead(owner)
    default = default_pipeline(owner)
    new = stage_of(default, "new")
    assert ok(_patch_stage(owner, default["id"], new["id"], {"category": "new"})) == new


def test_an_archived_stage_cannot_be_edited(owner):
    courses = create_pipeline(owner, "Courses", [*COURSE_FUNNEL, {"name": "Paused", "category": "frozen"}])
    paused = stage_of(courses, "frozen")
    ok(archive_stage(owner, courses["id"], paused["id"]))
    response = _patch_stage(owner, courses["id"], paused["id"], {"name": "Back"})
    assert response.status == 409
    assert response.error_code == "STAGE_ARCHIVED"


def test_a_stage_of_another_pipeline_another_organization_or_nowhere_is_not_found(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    default = default_pipeline(owner)
    theirs = create_pipeline(make_caller(role="owner"))
    answers = [
        _patch_stage(owner, courses["id"], stage_of(default, "new")["id"], {"name": "X"}),
        _patch_stage(owner, courses["id"], stage_of(theirs, "new")["id"], {"name": "X"}),
        _patch_stage(owner, courses["id"], uuid.uuid4(), {"name": "X"}),
        _patch_stage(owner, courses["id"], "not-a-uuid", {"name": "X"}),
    ]
    assert {a.status for a in answers} == {404}
    assert {a.error_code for a in answers} == {"STAGE_NOT_FOUND"}
    assert answers[0].body == answers[1].body == answers[2].body


def test_a_stage_through_another_organizations_pipeline_is_not_found_as_a_pipeline(owner):
    theirs = create_pipeline(make_caller(role="owner"))
    response = _patch_stage(owner, theirs["id"], stage_of(theirs, "new")["id"], {"name": "X"})
    assert response.status == 404
    assert response.error_code == "PIPELINE_NOT_FOUND"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x" * 101},
        {"category": "won"},
        {"category": None, "name": None},
        {"position": 1},
        {"name": 5},
    ],
)
def test_a_malformed_stage_edit_is_a_400(owner, body):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    response = _patch_stage(owner, courses["id"], stage_of(courses, "contacted")["id"], body)
    assert response.status == 400
    assert response.error_code == "VALIDATION_FAILED"


# -- PUT /pipelines/{id}/stages/order ---------------------------------------------------------------------


def _reorder(caller, pipeline_id, stage_ids):
    return call_api(
        "PUT", f"{stages_path(caller.org_id, pipeline_id)}/order", sub=caller.sub, body={"stageIds": stage_ids}
    )


def test_stages_are_reordered_as_listed(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    ids = [s["id"] for s in courses["stages"]]
    wanted = [ids[3], ids[0], ids[2], ids[1]]
    reordered = ok(_reorder(owner, courses["id"], wanted))
    assert [s["id"] for s in reordered["stages"]] == wanted
    assert [s["position"] for s in reordered["stages"]] == [0, 1, 2, 3]
    assert ok(get_pipeline(owner, courses["id"])) == reordered


def test_the_order_route_is_not_read_as_a_stage_id(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    response = _reorder(owner, courses["id"], [s["id"] for s in courses["stages"]])
    assert response.status == 200
    patch = call_api("PATCH", f"{stages_path(owner.org_id, courses['id'])}/order", sub=owner.sub, body={"name": "X"})
    assert patch.status == 404
    assert patch.error_code == "STAGE_NOT_FOUND"


def test_archived_stages_stay_behind_the_active_ones_after_a_reorder(owner):
    courses = create_pipeline(owner, "Courses", [*COURSE_FUNNEL, {"name": "Paused", "category": "frozen"}])
    paused = stage_of(courses, "frozen")
    ok(archive_stage(owner, courses["id"], paused["id"]))
    active = [s["id"] for s in courses["stages"] if s["id"] != paused["id"]]
    ok(_reorder(owner, courses["id"], list(reversed(active))))
    everything = ok(get_pipeline(owner, courses["id"], includeArchived="true"))
    assert [s["id"] for s in everything["stages"]] == [*reversed(active), paused["id"]]
    assert [s["position"] for s in everything["stages"]] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("case", ["missing", "duplicate", "archived", "other pipeline", "other organization"])
def test_a_reorder_that_is_not_exactly_the_active_stages_is_a_400_and_changes_nothing(owner, case):
    courses = create_pipeline(owner, "Courses", [*COURSE_FUNNEL, {"name": "Paused", "category": "frozen"}])
    paused = stage_of(courses, "frozen")
    ok(archive_stage(owner, courses["id"], paused["id"]))
    before = ok(get_pipeline(owner, courses["id"], includeArchived="true"))
    ids = [s["id"] for s in courses["stages"] if s["id"] != paused["id"]]
    wanted = {
        "missing": ids[:-1],
        "duplicate": [*ids, ids[0]],
        "archived": [*ids, paused["id"]],
        "other pipeline": [*ids, stage_of(default_pipeline(owner), "new")["id"]],
        "other organization": [*ids, stage_of(create_pipeline(make_caller(role="owner")), "new")["id"]],
    }[case]
    response = _reorder(owner, courses["id"], wanted)
    assert response.status == 400
    assert response.error_code == "STAGE_ORDER_MISMATCH"
    assert ok(get_pipeline(owner, courses["id"], includeArchived="true")) == before


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"stageIds": []},
        {"stageIds": "a,b"},
        {"stageIds": ["not-a-uuid"]},
        {"stageIds": [1, 2]},
        {"stageIds": [str(uuid.uuid4()) for _ in range(1001)]},
        {"stageIds": [str(uuid.uuid4())], "pipelineId": str(uuid.uuid4())},
    ],
)
def test_a_malformed_reorder_is_a_400(owner, body):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    response = call_api("PUT", f"{stages_path(owner.org_id, courses['id'])}/order", sub=owner.sub, body=body)
    assert response.status == 400
    assert response.error_code == "VALIDATION_FAILED"


def test_reordering_another_organizations_pipeline_is_not_found(owner):
    theirs = create_pipeline(make_caller(role="owner"))
    response = _reorder(owner, theirs["id"], [s["id"] for s in theirs["stages"]])
    assert response.status == 404
    assert response.error_code == "PIPELINE_NOT_FOUND"


def test_a_reorder_costs_the_same_statements_for_four_stages_as_for_sixty(owner):
    small = create_pipeline(owner, "Small", COURSE_FUNNEL)
    large = create_pipeline(
        owner, "Large", [*COURSE_FUNNEL, *({"name": f"Step {i}", "category": "contacted"} for i in range(56))]
    )
    costs = []
    for pipeline in (small, large):
        ids = [s["id"] for s in pipeline["stages"]]
        with count_statements(get_engine()) as log:
            ok(_reorder(owner, pipeline["id"], list(reversed(ids))))
        costs.append(len(log))
    print(f"\n[sql] reorder: {costs} statements")
    assert costs[0] == costs[1]


# -- POST /pipelines/{id}/stages/{stageId}/archive --------------------------------------------------------


def test_an_empty_stage_is_archived_and_the_others_close_ranks(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    called = stage_of(courses, "contacted")
    archived = ok(archive_stage(owner, courses["id"], called["id"]))
    assert archived["archivedAt"] is not None
    read = ok(get_pipeline(owner, courses["id"]))
    assert names_of(read) == ["Enquiry", "Bought", "Dropped"]
    assert [s["position"] for s in read["stages"]] == [0, 1, 2]


def test_archiving_converted_is_allowed_while_customer_remains(owner):
    default = default_pipeline(owner)
    ok(archive_stage(owner, default["id"], stage_of(default, "converted")["id"]))
    assert "converted" not in categories_of(default_pipeline(owner))


@pytest.mark.parametrize(("category", "missing"), [("new", ["new"]), ("customer", ["win"]), ("lost", ["lost"])])
def test_archiving_a_stage_that_breaks_win_coverage_is_a_400(owner, category, missing):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    response = archive_stage(owner, courses["id"], stage_of(courses, category)["id"])
    assert response.status == 400
    assert response.error_code == "PIPELINE_WIN_COVERAGE"
    assert response.body["error"]["missing"] == missing
    assert category in categories_of(ok(get_pipeline(owner, courses["id"])))


def test_the_last_win_stage_of_the_default_pipeline_cannot_be_archived(owner):
    default = default_pipeline(owner)
    ok(archive_stage(owner, default["id"], stage_of(default, "converted")["id"]))
    response = archive_stage(owner, default["id"], stage_of(default, "customer")["id"])
    assert response.status == 400
    assert response.body["error"]["missing"] == ["win"]


def test_a_stage_holding_a_lead_cannot_be_archived(owner):
    create_lead(owner)
    default = default_pipeline(owner)
    add_stage(owner, default["id"], "Walk-in", "new")  # so coverage alone would allow it
    new = stage_of(default, "new")
    response = archive_stage(owner, default["id"], new["id"])
    assert response.status == 409
    assert response.error_code == "STAGE_HAS_LEADS"
    assert response.body["error"]["leadCount"] == 1
    assert stage_of(default_pipeline(owner), "new")["id"] == new["id"]


def test_a_stage_holding_only_secondary_placements_cannot_be_archived(owner):
    lead = create_lead(owner)
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    called = stage_of(courses, "contacted")
    place_lead(owner.org_id, lead["id"], courses["id"], called["id"])
    response = archive_stage(owner, courses["id"], called["id"])
    assert response.status == 409
    assert response.error_code == "STAGE_HAS_LEADS"
    error = response.body["error"]
    assert (error["leadCount"], error["primaryLeadCount"], error["secondaryLeadCount"]) == (1, 0, 1)


def test_an_archived_lead_still_holds_its_stage(owner):
    lead = create_lead(owner)
    with get_engine().begin() as conn:
        conn.execute(update(leads).where(leads.c.id == uuid.UUID(lead["id"])).values(archived_at=func.now()))
    default = default_pipeline(owner)
    add_stage(owner, default["id"], "Walk-in", "new")
    response = archive_stage(owner, default["id"], stage_of(default, "new")["id"])
    assert response.status == 409
    assert response.error_code == "STAGE_HAS_LEADS"


def test_archiving_an_archived_stage_again_changes_nothing(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    called = stage_of(courses, "contacted")
    first = ok(archive_stage(owner, courses["id"], called["id"]))
    assert ok(archive_stage(owner, courses["id"], called["id"])) == first


def test_archiving_a_stage_of_another_pipeline_or_organization_is_not_found(owner):
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    theirs = create_pipeline(make_caller(role="owner"))
    same_org = archive_stage(owner, courses["id"], stage_of(default_pipeline(owner), "frozen")["id"])
    other_org = archive_stage(owner, courses["id"], stage_of(theirs, "frozen")["id"])
    assert same_org.status == other_org.status == 404
    assert same_org.body == other_org.body
    assert same_org.error_code == "STAGE_NOT_FOUND"
    with get_engine().connect() as conn:
        archived = conn.execute(
            select(pipeline_stages.c.archived_at).where(
                pipeline_stages.c.id == uuid.UUID(stage_of(theirs, "frozen")["id"])
            )
        ).scalar_one()
    assert archived is None  # the stranger's stage is untouched
