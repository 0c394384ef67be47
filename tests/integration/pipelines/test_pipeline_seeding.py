"""The default pipeline is seeded on first use, once, even when two first requests race."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from leadcrm.pipelines import stages as pipeline_service
from leadcrm.pipelines.rules.statuses import DEFAULT_STAGES, StageCategory
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from tests.support.factories import make_organization


def _pipeline_counts(engine, org_id) -> tuple[int, int]:
    with engine.connect() as conn:
        defaults = conn.execute(
            select(func.count())
            .select_from(pipelines)
            .where(pipelines.c.organization_id == org_id, pipelines.c.is_default)
        ).scalar_one()
        stages = conn.execute(
            select(func.count()).select_from(pipeline_stages).where(pipeline_stages.c.organization_id == org_id)
        ).scalar_one()
    return defaults, stages


def test_first_use_seeds_the_default_pipeline_with_one_stage_per_category(private_engine):
    org = make_organization()
    with private_engine.begin() as conn:
        placement = pipeline_service.default_new_stage(conn, org.id)
    assert placement.category is StageCategory.NEW
    with private_engine.connect() as conn:
        rows = conn.execute(
            select(pipeline_stages.c.category, pipeline_stages.c.position)
            .where(pipeline_stages.c.pipeline_id == placement.pipeline_id)
            .order_by(pipeline_stages.c.position)
        ).all()
    assert [r.category for r in rows] == [c.value for c, _ in DEFAULT_STAGES]


def test_a_second_use_finds_the_same_new_stage_without_seeding_again(private_engine):
    org = make_organization()
    with private_engine.begin() as conn:
        first = pipeline_service.default_new_stage(conn, org.id)
    with private_engine.begin() as conn:
        second = pipeline_service.default_new_stage(conn, org.id)
    assert second == first
    assert _pipeline_counts(private_engine, org.id) == (1, len(DEFAULT_STAGES))


def test_two_concurrent_first_requests_seed_exactly_one_default_pipeline(private_engine, monkeypatch):
    org = make_organization()
    # Both threads look for the pipeline, find none, and only then go on to insert: the real race.
    looked = threading.Barrier(2, timeout=10)
    start = threading.Barrier(2, timeout=10)
    real_lookup = pipeline_service._first_new_stage_of_default
    first_lookup_done = threading.local()

    def lookup_then_wait_for_the_other(conn, organization_id):
        found = real_lookup(conn, organization_id)
        if not getattr(first_lookup_done, "value", False):
            first_lookup_done.value = True
            looked.wait()
        return found

    monkeypatch.setattr(pipeline_service, "_first_new_stage_of_default", lookup_then_wait_for_the_other)
    results: list = [None, None]
    errors: list[BaseException] = []

    def first_request(slot: int) -> None:
        try:
            with private_engine.connect() as conn, conn.begin():
                start.wait()
                results[slot] = pipeline_service.default_new_stage(conn, org.id)
        except BaseException as error:  # surfaced below, on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=first_request, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert not errors, errors
    assert results[0] is not None and results[1] is not None
    assert results[0].stage_id == results[1].stage_id
    assert _pipeline_counts(private_engine, org.id) == (1, 9)


def test_an_organization_whose_default_pipeline_has_no_active_new_stage_is_a_conflict(private_engine):
    from sqlalchemy import update

    from leadcrm.platform.errors import Conflict

    org = make_organization()
    with private_engine.begin() as conn:
        pipeline_service.default_new_stage(conn, org.id)
        conn.execute(
            update(pipeline_stages)
            .where(pipeline_stages.c.organization_id == org.id, pipeline_stages.c.category == "new")
            .values(archived_at=func.now())
        )
    with private_engine.begin() as conn, pytest.raises(Conflict) as raised:
        pipeline_service.default_new_stage(conn, org.id)
    assert raised.value.code == "PIPELINE_HAS_NO_NEW_STAGE"
