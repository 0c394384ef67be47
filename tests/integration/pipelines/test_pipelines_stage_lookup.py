"""The stage lookups other areas build on: `resolve_stage` and `first_active_stage`."""

from __future__ import annotations

import uuid

import pytest

from leadcrm.pipelines import stages as service
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.platform.errors import NotFound
from tests.support.factories import make_caller
from tests.support.pipelines_helpers import add_stage, archive_stage, create_pipeline, default_pipeline, ok, stage_of


@pytest.fixture
def owner():
    return make_caller(role="owner")


def test_resolve_stage_returns_the_stage_with_its_pipeline_category_and_position(owner, private_engine):
    default = default_pipeline(owner)
    contacted = stage_of(default, "contacted")
    with private_engine.connect() as conn:
        stage = service.resolve_stage(conn, owner.org_id, uuid.UUID(contacted["id"]))
    assert stage == service.StageRow(
        id=uuid.UUID(contacted["id"]),
        pipeline_id=uuid.UUID(default["id"]),
        category=StageCategory.CONTACTED,
        position=contacted["position"],
        archived_at=None,
    )


def test_resolve_stage_returns_an_archived_stage_with_its_archived_at(owner, private_engine):
    default = default_pipeline(owner)
    frozen = stage_of(default, "frozen")
    ok(archive_stage(owner, default["id"], frozen["id"]))
    with private_engine.connect() as conn:
        assert service.resolve_stage(conn, owner.org_id, uuid.UUID(frozen["id"])).archived_at is not None


def test_resolve_stage_does_not_find_another_organizations_stage_or_a_random_id(owner, private_engine):
    theirs = default_pipeline(make_caller(role="owner"))
    with private_engine.connect() as conn:
        for stage_id in (uuid.UUID(stage_of(theirs, "new")["id"]), uuid.uuid4()):
            with pytest.raises(NotFound) as raised:
                service.resolve_stage(conn, owner.org_id, stage_id)
            assert raised.value.code == "STAGE_NOT_FOUND"


def test_first_active_stage_is_the_lowest_active_position_of_the_category(owner, private_engine):
    courses = create_pipeline(
        owner,
        "Courses",
        [
            {"name": "Enquiry", "category": "new"},
            {"name": "Customer", "category": "customer"},
            {"name": "Dropped", "category": "lost"},
        ],
    )
    walk_in = add_stage(owner, courses["id"], "Walk-in", "new", position=0)
    with private_engine.connect() as conn:
        first = service.first_active_stage(conn, owner.org_id, uuid.UUID(courses["id"]), StageCategory.NEW)
    assert first is not None and str(first.id) == walk_in["id"]

    ok(archive_stage(owner, courses["id"], walk_in["id"]))
    with private_engine.connect() as conn:
        first = service.first_active_stage(conn, owner.org_id, uuid.UUID(courses["id"]), StageCategory.NEW)
    assert first is not None and str(first.id) == stage_of(courses, "new")["id"]


def test_first_active_stage_is_none_when_the_pipeline_has_no_such_stage(owner, private_engine):
    courses = create_pipeline(
        owner,
        "Courses",
        [
            {"name": "Enquiry", "category": "new"},
            {"name": "Customer", "category": "customer"},
            {"name": "Dropped", "category": "lost"},
        ],
    )
    with private_engine.connect() as conn:
        assert service.first_active_stage(conn, owner.org_id, uuid.UUID(courses["id"]), StageCategory.CONVERTED) is None


def test_first_active_stage_does_not_look_into_another_organizations_pipeline(owner, private_engine):
    theirs = default_pipeline(make_caller(role="owner"))
    with private_engine.connect() as conn:
        assert service.first_active_stage(conn, owner.org_id, uuid.UUID(theirs["id"]), StageCategory.NEW) is None
