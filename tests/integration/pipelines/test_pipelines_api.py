"""Pipelines API (staff): list, read, create, rename, archive (stages: test_pipeline_stages_api.py).

Staff read; owners and admins edit. Every pipeline keeps an active new, lost and win (converted or
customer) stage; a stage holding leads keeps its category and cannot be archived.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from leadcrm.leads.tables import lead_pipeline_placements
from leadcrm.pipelines.rules.statuses import DEFAULT_PIPELINE_NAME, DEFAULT_STAGES
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.pipelines_helpers import (
    COURSE_FUNNEL,
    DEFAULT_CATEGORIES,
    archive_stage,
    categories_of,
    colleague,
    create_lead,
    create_pipeline,
    default_pipeline,
    default_pipeline_count,
    get_pipeline,
    list_pipelines,
    names_of,
    ok,
    pipelines_path,
    place_lead,
    stage_of,
    stages_path,
)

# -- GET /pipelines ---------------------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("with_event_bus")


def test_a_new_organization_sees_its_default_pipeline_with_one_stage_per_category(owner):
    listed = list_pipelines(owner)
    assert len(listed) == 1
    default = listed[0]
    assert default["isDefault"] is True
    assert default["name"] == DEFAULT_PIPELINE_NAME
    assert default["archivedAt"] is None
    assert categories_of(default) == DEFAULT_CATEGORIES
    assert [s["position"] for s in default["stages"]] == list(range(len(DEFAULT_STAGES)))


def test_a_pipeline_and_its_stages_are_camel_case_json_with_the_documented_fields(owner):
    pipeline = list_pipelines(owner)[0]
    assert set(pipeline) == {"id", "name", "isDefault", "archivedAt", "createdAt", "stages"}
    assert set(pipeline["stages"][0]) == {"id", "name", "category", "position", "archivedAt"}


def test_listing_again_does_not_seed_a_second_default_pipeline(owner):
    first = list_pipelines(owner)
    second = list_pipelines(owner)
    assert first == second
    assert default_pipeline_count(owner.org_id) == 1


def test_the_listed_default_is_the_pipeline_new_leads_land_on(owner):
    lead = create_lead(owner)
    default = default_pipeline(owner)
    assert lead["pipelineId"] == default["id"]
    assert lead["stageId"] == stage_of(default, "new")["id"]


def test_the_default_pipeline_is_listed_first_then_pipelines_in_creation_order(owner):
    first = create_pipeline(owner, "First")
    second = create_pipeline(owner, "Second")
    assert [p["id"] for p in list_pipelines(owner)][1:] == [first["id"], second["id"]]
    assert list_pipelines(owner)[0]["isDefault"] is True


def test_archived_pipelines_are_left_out_unless_asked_for(owner):
    kept = create_pipeline(owner, "Kept")
    gone = create_pipeline(owner, "Gone")
    ok(call_api("POST", f"{pipelines_path(owner.org_id, gone['id'])}/archive", sub=owner.sub))
    assert gone["id"] not in [p["id"] for p in list_pipelines(owner)]
    assert kept["id"] in [p["id"] for p in list_pipelines(owner)]
    with_archived = list_pipelines(owner, includeArchived="true")
    assert gone["id"] in [p["id"] for p in with_archived]


def test_archived_stages_are_left_out_unless_asked_for(owner):
    default = default_pipeline(owner)
    frozen = stage_of(default, "frozen")
    ok(archive_stage(owner, default["id"], frozen["id"]))
    assert "frozen" not in categories_of(default_pipeline(owner))
    listed = next(p for p in list_pipelines(owner, includeArchived="true") if p["isDefault"])
    assert stage_of(listed, "frozen")["archivedAt"] is not None


def test_another_organizations_pipelines_are_not_listed(owner):
    stranger = make_caller(role="owner")
    theirs = create_pipeline(stranger, "Theirs")
    assert theirs["id"] not in [p["id"] for p in list_pipelines(owner)]


@pytest.mark.parametrize("value", ["yes-please", "2"])
def test_an_include_archived_that_is_not_a_boolean_is_a_400(owner, value):
    response = call_api("GET", pipelines_path(owner.org_id), sub=owner.sub, query={"includeArchived": value})
    assert response.status == 400
    assert response.error_code == "VALIDATION_FAILED"


def test_the_list_costs_the_same_statements_for_one_pipeline_as_for_twelve(owner):
    list_pipelines(owner)  # seeds the default
    with count_statements(get_engine()) as one:
        list_pipelines(owner)
    for index in range(11):
        create_pipeline(owner, f"Pipeline {index}")
    with count_statements(get_engine()) as twelve:
        assert len(list_pipelines(owner)) == 12
    print(f"\n[sql] GET pipelines: {len(twelve)} statements\n{twelve.describe()}")
    assert len(twelve) == len(one) <= 3  # the caller, the pipelines, their stages


# -- GET /pipelines/{id} ----------------------------------------------------------------------------------


def test_one_pipeline_is_read_with_its_stages(owner):
    created = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    read = ok(get_pipeline(owner, created["id"]))
    assert read == created


def test_one_archived_pipeline_can_still_be_read_by_id(owner):
    created = create_pipeline(owner)
    ok(call_api("POST", f"{pipelines_path(owner.org_id, created['id'])}/archive", sub=owner.sub))
    assert ok(get_pipeline(owner, created["id"]))["archivedAt"] is not None


def test_reading_one_pipeline_shows_archived_stages_only_when_asked(owner):
    created = create_pipeline(owner)
    frozen = stage_of(created, "frozen")
    ok(archive_stage(owner, created["id"], frozen["id"]))
    assert "frozen" not in categories_of(ok(get_pipeline(owner, created["id"])))
    assert "frozen" in categories_of(ok(get_pipeline(owner, created["id"], includeArchived="true")))


def test_another_organizations_pipeline_answers_exactly_like_a_random_id(owner):
    theirs = create_pipeline(make_caller(role="owner"))
    foreign = get_pipeline(owner, theirs["id"])
    random = get_pipeline(owner, uuid.uuid4())
    assert foreign.status == random.status == 404
    assert foreign.body == random.body
    assert foreign.error_code == "PIPELINE_NOT_FOUND"


def test_a_pipeline_id_that_is_not_a_uuid_is_not_found(owner):
    response = get_pipeline(owner, "not-a-uuid")
    assert response.status == 404
    assert response.error_code == "PIPELINE_NOT_FOUND"


# -- who may read and write -------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["owner", "admin", "coach"])
def test_staff_may_read_pipelines(owner, role):
    caller = colleague(owner, role)
    assert list_pipelines(caller)
    assert get_pipeline(caller, default_pipeline(owner)["id"]).status == 200


def test_a_member_may_not_read_pipelines(owner):
    member = colleague(owner, "member")
    response = call_api("GET", pipelines_path(owner.org_id), sub=member.sub)
    assert response.status == 403
    assert response.error_code == "STAFF_ONLY"


def test_someone_outside_the_organization_may_not_read_its_pipelines(owner):
    outsider = make_caller(role="owner")
    response = call_api("GET", pipelines_path(owner.org_id), sub=outsider.sub)
    assert response.status == 403
    assert response.error_code == "NOT_A_MEMBER"


def test_an_organization_without_lead_management_has_no_pipelines_api():
    caller = make_caller(role="owner", features={})
    response = call_api("GET", pipelines_path(caller.org_id), sub=caller.sub)
    assert response.status == 403
    assert response.error_code == "FEATURE_DISABLED"


def _every_write(owner) -> list[tuple[str, str, dict | None]]:
    default = default_pipeline(owner)
    other = create_pipeline(owner, "Other")
    stage = stage_of(other, "frozen")
    return [
        ("POST", pipelines_path(owner.org_id), {"name": "Mine"}),
        ("PATCH", pipelines_path(owner.org_id, other["id"]), {"name": "Renamed"}),
        ("PATCH", stages_path(owner.org_id, other["id"], stage["id"]), {"name": "Renamed"}),
        ("PUT", f"{stages_path(owner.org_id, other['id'])}/order", {"stageIds": [s["id"] for s in other["stages"]]}),
        ("POST", stages_path(owner.org_id, other["id"]), {"name": "Extra", "category": "contacted"}),
        ("POST", f"{stages_path(owner.org_id, other['id'], stage['id'])}/archive", None),
        ("POST", f"{stages_path(owner.org_id, default['id'], stage_of(default, 'frozen')['id'])}/archive", None),
        ("POST", f"{pipelines_path(owner.org_id, other['id'])}/archive", None),
    ]


@pytest.mark.parametrize("role", ["coach", "member"])
def test_a_coach_or_member_may_not_edit_pipelines_or_stages_and_nothing_changes(owner, role):
    caller = colleague(owner, role)
    writes = _every_write(owner)
    before = list_pipelines(owner, includeArchived="true")
    for method, path, body in writes:
        response = call_api(method, path, sub=caller.sub, body=body)
        assert response.status == 403, (method, path, response.body)
        assert response.error_code == "OWNER_OR_ADMIN_ONLY"
    assert list_pipelines(owner, includeArchived="true") == before


def test_an_admin_may_edit_pipelines_and_stages(owner):
    admin = colleague(owner, "admin")
    for method, path, body in _every_write(owner):
        response = call_api(method, path, sub=admin.sub, body=body)
        assert response.status in (200, 201), (method, path, response.body)


# -- POST /pipelines --------------------------------------------------------------------------------------


def test_a_pipeline_created_without_stages_gets_one_stage_per_category_like_the_default(owner):
    created = create_pipeline(owner, "Second location")
    assert created["name"] == "Second location"
    assert created["isDefault"] is False
    assert created["archivedAt"] is None
    assert categories_of(created) == DEFAULT_CATEGORIES
    assert [s["position"] for s in created["stages"]] == list(range(len(DEFAULT_STAGES)))


def test_a_pipeline_created_with_stages_keeps_them_in_the_order_given(owner):
    created = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    assert names_of(created) == [s["name"] for s in COURSE_FUNNEL]
    assert [s["position"] for s in created["stages"]] == [0, 1, 2, 3]
    assert ok(get_pipeline(owner, created["id"])) == created


def test_a_created_pipeline_is_listed(owner):
    created = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    assert created in list_pipelines(owner)


@pytest.mark.parametrize(
    ("categories", "missing"),
    [
        (["contacted", "customer", "lost"], ["new"]),
        (["new", "contacted", "lost", "frozen"], ["win"]),
        (["new", "converted"], ["lost"]),
        (["contacted", "frozen"], ["new", "win", "lost"]),
    ],
)
def test_stages_that_break_win_coverage_are_a_400_naming_what_is_missing(owner, categories, missing):
    stages = [{"name": c.title(), "category": c} for c in categories]
    response = call_api("POST", pipelines_path(owner.org_id), sub=owner.sub, body={"name": "Bad", "stages": stages})
    assert response.status == 400
    assert response.error_code == "PIPELINE_WIN_COVERAGE"
    assert response.body["error"]["missing"] == missing
    assert len(list_pipelines(owner)) == 1


def test_either_win_flavour_alone_makes_a_valid_pipeline(owner):
    for win in ("converted", "customer"):
        stages = [{"name": "N", "category": "new"}, {"name": "W", "category": win}, {"name": "L", "category": "lost"}]
        assert categories_of(create_pipeline(owner, win, stages)) == ["new", win, "lost"]


def test_a_pipeline_name_is_trimmed(owner):
    assert create_pipeline(owner, "  Courses  ")["name"] == "Courses"


def test_a_replayed_idempotency_key_creates_one_pipeline(owner):
    headers = {"idempotency-key": "pipeline-once"}
    first = call_api("POST", pipelines_path(owner.org_id), sub=owner.sub, body={"name": "Once"}, headers=headers)
    again = call_api("POST", pipelines_path(owner.org_id), sub=owner.sub, body={"name": "Once"}, headers=headers)
    assert first.status == again.status == 201
    assert again.body == first.body
    assert [p["name"] for p in list_pipelines(owner)].count("Once") == 1


def test_an_organization_at_its_pipeline_limit_cannot_create_another(owner, monkeypatch):
    from leadcrm.pipelines import editing as service

    monkeypatch.setattr(service, "MAX_ACTIVE_PIPELINES_PER_ORGANIZATION", 2)
    list_pipelines(owner)  # the default is the first
    create_pipeline(owner, "Second")
    response = call_api("POST", pipelines_path(owner.org_id), sub=owner.sub, body={"name": "Third"})
    assert response.status == 409
    assert response.error_code == "PIPELINE_LIMIT_REACHED"


_STAGE = {"name": "New", "category": "new"}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 101},
        {"name": 123},
        {"name": None},
        {"name": ["Sales"]},
        {"name": "Sales", "isDefault": True},
        {"name": "Sales", "colour": "red"},
        {"name": "Sales\x00"},
        {"name": "Sales", "stages": []},
        {"name": "Sales", "stages": "new,lost"},
        {"name": "Sales", "stages": [_STAGE] * 1001},
        {"name": "Sales", "stages": [_STAGE] * 101},
        {"name": "Sales", "stages": [{"name": "Won", "category": "won"}]},
        {"name": "Sales", "stages": [{"name": "N", "category": "NEW"}]},
        {"name": "Sales", "stages": [{"name": "N"}]},
        {"name": "Sales", "stages": [{"category": "new"}]},
        {"name": "Sales", "stages": [{"name": "", "category": "new"}]},
        {"name": "Sales", "stages": [{"name": "N", "category": "new", "position": 3}]},
        {"name": "Sales", "stages": [{"name": "N", "category": 1}]},
        {"name": "Sales", "stages": ["new"]},
    ],
)
def test_a_malformed_create_is_a_400_and_creates_nothing(owner, body):
    response = call_api("POST", pipelines_path(owner.org_id), sub=owner.sub, body=body)
    assert response.status == 400, response.body
    assert response.error_code == "VALIDATION_FAILED"
    assert len(list_pipelines(owner)) == 1


@pytest.mark.parametrize("raw", ["{", '["name"]', "null", '"Sales"'])
def test_a_create_body_that_is_not_a_json_object_is_a_400(owner, raw):
    response = call_api(
        "POST", pipelines_path(owner.org_id), sub=owner.sub, body=raw, headers={"content-type": "application/json"}
    )
    assert response.status == 400
    assert response.error_code in ("MALFORMED_JSON", "VALIDATION_FAILED")


# -- PATCH /pipelines/{id} --------------------------------------------------------------------------------


def _rename(caller, pipeline_id, body):
    return call_api("PATCH", pipelines_path(caller.org_id, pipeline_id), sub=caller.sub, body=body)


def test_a_pipeline_is_renamed_and_keeps_its_stages(owner):
    created = create_pipeline(owner, "Old")
    renamed = ok(_rename(owner, created["id"], {"name": "  New name "}))
    assert renamed["name"] == "New name"
    assert renamed["stages"] == created["stages"]
    assert ok(get_pipeline(owner, created["id"]))["name"] == "New name"


def test_the_default_pipeline_may_be_renamed_and_stays_the_default(owner):
    default = default_pipeline(owner)
    renamed = ok(_rename(owner, default["id"], {"name": "Studio sales"}))
    assert renamed["isDefault"] is True
    assert default_pipeline(owner)["name"] == "Studio sales"


def test_renaming_another_organizations_pipeline_is_not_found_and_changes_nothing(owner):
    stranger = make_caller(role="owner")
    theirs = create_pipeline(stranger, "Theirs")
    foreign = _rename(owner, theirs["id"], {"name": "Mine now"})
    random = _rename(owner, uuid.uuid4(), {"name": "Mine now"})
    assert foreign.status == random.status == 404
    assert foreign.body == random.body
    assert ok(get_pipeline(stranger, theirs["id"]))["name"] == "Theirs"


def test_an_archived_pipeline_cannot_be_renamed(owner):
    created = create_pipeline(owner)
    ok(call_api("POST", f"{pipelines_path(owner.org_id, created['id'])}/archive", sub=owner.sub))
    response = _rename(owner, created["id"], {"name": "Revived"})
    assert response.status == 409
    assert response.error_code == "PIPELINE_ARCHIVED"


@pytest.mark.parametrize(
    "body", [{}, {"name": ""}, {"name": "x" * 101}, {"name": 7}, {"name": "A", "archivedAt": None}, {"isDefault": True}]
)
def test_a_malformed_rename_is_a_400(owner, body):
    created = create_pipeline(owner)
    response = _rename(owner, created["id"], body)
    assert response.status == 400
    assert response.error_code == "VALIDATION_FAILED"


# -- POST /pipelines/{id}/archive -------------------------------------------------------------------------


def _archive_pipeline(caller, pipeline_id):
    return call_api("POST", f"{pipelines_path(caller.org_id, pipeline_id)}/archive", sub=caller.sub)


def test_the_default_pipeline_cannot_be_archived(owner):
    default = default_pipeline(owner)
    response = _archive_pipeline(owner, default["id"])
    assert response.status == 400
    assert response.error_code == "DEFAULT_PIPELINE_CANNOT_BE_ARCHIVED"
    assert default_pipeline(owner)["archivedAt"] is None


def test_an_archived_pipeline_is_stamped_and_leaves_the_list(owner):
    created = create_pipeline(owner)
    archived = ok(_archive_pipeline(owner, created["id"]))
    assert archived["archivedAt"] is not None
    assert created["id"] not in [p["id"] for p in list_pipelines(owner)]


def test_archiving_an_archived_pipeline_again_changes_nothing(owner):
    created = create_pipeline(owner)
    first = ok(_archive_pipeline(owner, created["id"]))
    again = ok(_archive_pipeline(owner, created["id"]))
    assert again == first


def test_leads_stay_where_they_are_when_their_pipeline_is_archived(owner):
    lead = create_lead(owner)
    courses = create_pipeline(owner, "Courses", COURSE_FUNNEL)
    called = stage_of(courses, "contacted")
    place_lead(owner.org_id, lead["id"], courses["id"], called["id"])
    ok(_archive_pipeline(owner, courses["id"]))
    with get_engine().connect() as conn:
        stage_id = conn.execute(
            select(lead_pipeline_placements.c.stage_id).where(
                lead_pipeline_placements.c.lead_id == uuid.UUID(lead["id"])
            )
        ).scalar_one()
    assert str(stage_id) == called["id"]


def test_archiving_another_organizations_pipeline_is_not_found(owner):
    theirs = create_pipeline(make_caller(role="owner"))
    response = _archive_pipeline(owner, theirs["id"])
    assert response.status == 404
    assert response.error_code == "PIPELINE_NOT_FOUND"


def test_stages_of_an_archived_pipeline_can_no_longer_be_edited(owner):
    created = create_pipeline(owner)
    ok(_archive_pipeline(owner, created["id"]))
    response = call_api(
        "POST", stages_path(owner.org_id, created["id"]), sub=owner.sub, body={"name": "X", "category": "new"}
    )
    assert response.status == 409
    assert response.error_code == "PIPELINE_ARCHIVED"
