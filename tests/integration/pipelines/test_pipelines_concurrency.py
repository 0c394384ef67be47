"""Concurrent pipeline edits: the pipeline row serializes them, so the rules hold for the pair, not just each.

The races are forced: each request is held right after it reads the stages (where an unlocked edit would
check coverage against a stale view) until the other one gets there too, or a short wait proves the other
one cannot (it is queued on the pipeline lock, as it should be).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select

from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor, Role
from leadcrm.pipelines import editing as editing
from leadcrm.pipelines import queries
from leadcrm.pipelines import stages as service
from leadcrm.pipelines.rules.statuses import DEFAULT_STAGES, StageCategory
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError
from tests.support.concurrency import run_together
from tests.support.factories import make_caller

# How long a request held after its stage read waits for the other. Long enough that an unlocked pair
# always meets; a correctly locked pair spends it once, then runs one after the other.
MEETING_WAIT_SECONDS = 1.5


def _actor(caller) -> Actor:
    return Actor(
        user_id=caller.user.id,
        organization_id=caller.org_id,
        membership_id=caller.membership.id,
        role=Role.OWNER,
        features=frozenset({LEAD_MANAGEMENT}),
    )


def _hold_after_reading_stages(monkeypatch) -> None:
    meeting = threading.Barrier(2, timeout=MEETING_WAIT_SECONDS)
    real = editing._stages_of

    def read_then_wait_for_the_other(conn, organization_id, pipeline_id):
        stages = real(conn, organization_id, pipeline_id)
        # A broken meeting: the other request is queued on the pipeline lock (or already done), go on alone.
        with contextlib.suppress(threading.BrokenBarrierError):
            meeting.wait()
        return stages

    monkeypatch.setattr(editing, "_stages_of", read_then_wait_for_the_other)


def _active_categories(engine, pipeline_id) -> list[str]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                select(pipeline_stages.c.category).where(
                    pipeline_stages.c.pipeline_id == pipeline_id, pipeline_stages.c.archived_at.is_(None)
                )
            ).scalars()
        )


def _course_pipeline(private_engine, actor: Actor) -> queries.PipelineView:
    stages = [
        editing.NewStage("Enquiry", StageCategory.NEW),
        editing.NewStage("Member", StageCategory.CONVERTED),
        editing.NewStage("Bought", StageCategory.CUSTOMER),
        editing.NewStage("Dropped", StageCategory.LOST),
    ]
    with UnitOfWork(engine=private_engine) as uow:
        created = editing.create_pipeline(uow, actor, "Courses", stages)
        uow.commit()
    return created


def _in_own_transaction(private_engine, operation: Callable[[UnitOfWork], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with UnitOfWork(engine=private_engine) as uow:
            result = operation(uow)
            uow.commit()
            return result

    return run


def test_two_concurrent_archives_of_the_two_win_stages_cannot_together_break_win_coverage(private_engine, monkeypatch):
    actor = _actor(make_caller(role="owner"))
    courses = _course_pipeline(private_engine, actor)
    win_stages = [s for s in courses.stages if s.category in (StageCategory.CONVERTED, StageCategory.CUSTOMER)]
    _hold_after_reading_stages(monkeypatch)

    results, errors = run_together(
        [
            _in_own_transaction(
                private_engine, lambda uow, s=stage: editing.archive_stage(uow, actor, courses.id, s.id)
            )
            for stage in win_stages
        ]
    )

    refused = [e for e in errors if e is not None]
    assert len(refused) == 1, errors
    assert isinstance(refused[0], AppError) and refused[0].code == "PIPELINE_WIN_COVERAGE"
    assert refused[0].extra["missing"] == ["win"]
    assert sum(r is not None for r in results) == 1
    remaining = _active_categories(private_engine, courses.id)
    assert {"converted", "customer"} & set(remaining)


def test_a_concurrent_archive_and_category_change_cannot_together_break_win_coverage(private_engine, monkeypatch):
    actor = _actor(make_caller(role="owner"))
    courses = _course_pipeline(private_engine, actor)
    converted = next(s for s in courses.stages if s.category is StageCategory.CONVERTED)
    customer = next(s for s in courses.stages if s.category is StageCategory.CUSTOMER)
    _hold_after_reading_stages(monkeypatch)

    _, errors = run_together(
        [
            _in_own_transaction(
                private_engine, lambda uow: editing.archive_stage(uow, actor, courses.id, converted.id)
            ),
            _in_own_transaction(
                private_engine,
                lambda uow: editing.update_stage(uow, actor, courses.id, customer.id, category=StageCategory.CONTACTED),
            ),
        ]
    )

    assert sum(e is not None for e in errors) == 1, errors
    assert {"converted", "customer"} & set(_active_categories(private_engine, courses.id))


def test_two_concurrent_stage_inserts_both_land_with_distinct_contiguous_positions(private_engine, monkeypatch):
    actor = _actor(make_caller(role="owner"))
    courses = _course_pipeline(private_engine, actor)
    _hold_after_reading_stages(monkeypatch)

    _, errors = run_together(
        [
            _in_own_transaction(
                private_engine,
                lambda uow, n=name: editing.add_stage(
                    uow, actor, courses.id, editing.NewStage(n, StageCategory.FROZEN), 0
                ),
            )
            for name in ("Paused A", "Paused B")
        ]
    )

    assert errors == [None, None]
    with private_engine.connect() as conn:
        positions = sorted(
            conn.execute(
                select(pipeline_stages.c.position).where(pipeline_stages.c.pipeline_id == courses.id)
            ).scalars()
        )
    assert positions == list(range(6))


def test_two_concurrent_first_pipeline_lists_seed_exactly_one_default_pipeline(private_engine, monkeypatch):
    caller = make_caller(role="owner")
    # Both requests read the pipelines, find none, and only then go on to seed: the real race.
    looked = threading.Barrier(2, timeout=10)
    real_read = queries._read_pipelines
    first_read_done = threading.local()

    def read_then_wait_for_the_other(conn, organization_id, *, include_archived):
        rows = real_read(conn, organization_id, include_archived=include_archived)
        if not getattr(first_read_done, "value", False):
            first_read_done.value = True
            looked.wait()
        return rows

    monkeypatch.setattr(queries, "_read_pipelines", read_then_wait_for_the_other)

    def first_list() -> list[queries.PipelineView]:
        with UnitOfWork(engine=private_engine) as uow:
            listed = queries.list_pipelines(uow.connection, caller.org_id, include_archived=False)
            uow.commit()
            return listed

    results, errors = run_together([first_list, first_list])

    assert errors == [None, None]
    assert [len(r) for r in results] == [1, 1]
    assert results[0][0].id == results[1][0].id
    assert results[0][0].is_default and results[0][0].stages == results[1][0].stages
    with private_engine.connect() as conn:
        defaults = conn.execute(
            select(func.count())
            .select_from(pipelines)
            .where(pipelines.c.organization_id == caller.org_id, pipelines.c.is_default)
        ).scalar_one()
        stages = conn.execute(
            select(func.count()).select_from(pipeline_stages).where(pipeline_stages.c.organization_id == caller.org_id)
        ).scalar_one()
    assert (defaults, stages) == (1, len(DEFAULT_STAGES))


def test_an_archive_waits_for_a_lead_move_that_holds_the_stage_and_then_sees_its_lead(private_engine):
    """A move into the stage takes it FOR KEY SHARE (resolve_stage) before writing the lead; the archive's
    FOR UPDATE waits for that move to commit and then counts the lead, instead of archiving under it."""
    caller = make_caller(role="owner")
    actor = _actor(caller)
    courses = _course_pipeline(private_engine, actor)
    enquiry = next(s for s in courses.stages if s.category is StageCategory.NEW)
    with private_engine.begin() as conn:
        service.ensure_default_pipeline(conn, caller.org_id)
    mover_holds_stage = threading.Event()
    archive_started = threading.Event()

    def move_a_lead_into_the_stage() -> None:
        from sqlalchemy import insert

        from leadcrm.leads.tables import lead_pipeline_placements, leads
        from leadcrm.platform.ids import uuid7

        with private_engine.connect() as conn, conn.begin():
            placement = service.default_new_stage(conn, caller.org_id)
            lead_id = uuid7()
            conn.execute(
                insert(leads).values(
                    id=lead_id,
                    organization_id=caller.org_id,
                    name="Ada",
                    status="new",
                    pipeline_id=placement.pipeline_id,
                    stage_id=placement.stage_id,
                )
            )
            stage = service.resolve_stage(conn, caller.org_id, enquiry.id)
            assert stage.archived_at is None
            mover_holds_stage.set()
            archive_started.wait(timeout=10)
            threading.Event().wait(0.5)  # the archive is now queued behind this transaction
            conn.execute(
                insert(lead_pipeline_placements).values(
                    id=uuid7(),
                    organization_id=caller.org_id,
                    lead_id=lead_id,
                    pipeline_id=courses.id,
                    stage_id=stage.id,
                )
            )

    def archive_the_stage() -> queries.StageView:
        mover_holds_stage.wait(timeout=10)
        archive_started.set()
        # a second New stage first, so that coverage alone would allow the archive
        with UnitOfWork(engine=private_engine) as uow:
            editing.add_stage(uow, actor, courses.id, editing.NewStage("Walk-in", StageCategory.NEW))
            uow.commit()
        with UnitOfWork(engine=private_engine) as uow:
            archived = editing.archive_stage(uow, actor, courses.id, enquiry.id)
            uow.commit()
            return archived

    results, errors = run_together([move_a_lead_into_the_stage, archive_the_stage])

    assert errors[0] is None, errors
    assert isinstance(errors[1], AppError) and errors[1].code == "STAGE_HAS_LEADS", errors
    assert results[1] is None
    with private_engine.connect() as conn:
        archived_at = conn.execute(
            select(pipeline_stages.c.archived_at).where(pipeline_stages.c.id == enquiry.id)
        ).scalar_one()
    assert archived_at is None
