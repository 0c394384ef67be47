"""The rollups are folded by a consumer (migration 0032, analytics.rollup_queue): a writer only queues the leads
it touched; a fold, a report or the `analytics_fold` job brings the rollups up to date from the source rows."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import DBAPIError

from leadcrm.analytics.jobs import rebuild_rollups, rollup_snapshot
from leadcrm.analytics.rollup_queue import fold_pending, run_fold_job
from leadcrm.analytics.tables import analytics_daily_funnel, analytics_lead_facts, analytics_pending_batches
from leadcrm.directory.tables import organizations, users
from leadcrm.platform.db.engine import get_engine
from tests.support.analytics_helpers import get_analytics
from tests.support.api import call_api, leads_path
from tests.support.events import lambda_context
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import make_board
from tests.support.lead_moves_helpers import create_lead, patch_lead


def _queued(organization_id: uuid.UUID) -> set[str]:
    with get_engine().connect() as conn:
        return {
            str(lead_id)
            for lead_id in conn.execute(
                select(func.unnest(analytics_pending_batches.c.lead_ids)).where(
                    analytics_pending_batches.c.organization_id == organization_id
                )
            ).scalars()
        }


def _facts(organization_id: uuid.UUID) -> int:
    with get_engine().connect() as conn:
        return conn.execute(
            select(func.count()).where(analytics_lead_facts.c.organization_id == organization_id)
        ).scalar_one()


def _fold(organization_id: uuid.UUID, **limit: int) -> int:
    with get_engine().begin() as conn:
        return fold_pending(conn, organization_id, **limit)


def _owner_with_leads(count: int) -> tuple[Any, list[str]]:
    owner = make_caller(role="owner")
    make_board(owner.org_id, default=True)
    return owner, [create_lead(owner, f"Queued {n}")["id"] for n in range(count)]


def test_a_write_queues_its_lead_and_leaves_the_rollups_to_the_fold():
    owner, leads = _owner_with_leads(2)
    assert _queued(owner.org_id) == set(leads)
    assert _facts(owner.org_id) == 0


def test_a_fold_brings_the_rollups_to_what_a_rebuild_computes_and_empties_the_queue():
    owner, leads = _owner_with_leads(3)
    assert patch_lead(owner, leads[0], {"status": "contacted"}).status == 200
    assert _fold(owner.org_id) == 3
    assert _queued(owner.org_id) == set()
    with get_engine().begin() as conn:
        folded = rollup_snapshot(conn, owner.org_id)
        rebuild_rollups(conn, owner.org_id)
        assert rollup_snapshot(conn, owner.org_id) == folded
    assert _facts(owner.org_id) == 3


def test_a_fold_with_nothing_queued_changes_nothing():
    owner, _ = _owner_with_leads(1)
    _fold(owner.org_id)
    assert _fold(owner.org_id) == 0


def test_a_fold_refreshes_no_more_than_its_limit_and_the_rest_stays_queued():
    owner, _ = _owner_with_leads(3)
    assert 1 <= _fold(owner.org_id, limit=2) <= 2
    assert _queued(owner.org_id)
    _fold(owner.org_id)
    assert _queued(owner.org_id) == set()


def test_a_lead_written_after_its_fold_is_queued_again():
    owner, leads = _owner_with_leads(1)
    _fold(owner.org_id)
    assert patch_lead(owner, leads[0], {"status": "contacted"}).status == 200
    assert _queued(owner.org_id) == {leads[0]}


def test_a_fold_of_one_organization_leaves_another_organizations_queue():
    mine, _ = _owner_with_leads(1)
    theirs, their_leads = _owner_with_leads(1)
    _fold(mine.org_id)
    assert _queued(theirs.org_id) == set(their_leads)


def test_a_report_folds_its_organization_before_it_reads():
    owner, leads = _owner_with_leads(2)
    assert patch_lead(owner, leads[1], {"status": "contacted"}).status == 200
    response = get_analytics(owner.sub, owner.org_id, "funnel")
    assert response.status == 200
    assert response.data["total"] == 2
    assert _queued(owner.org_id) == set()


def test_a_lead_changed_in_a_way_the_rollups_do_not_read_is_not_queued():
    owner, leads = _owner_with_leads(1)
    _fold(owner.org_id)
    assert patch_lead(owner, leads[0], {"name": "Renamed"}).status == 200
    assert _queued(owner.org_id) == set()


def test_a_timezone_change_queues_every_real_lead_of_the_organization():
    owner, leads = _owner_with_leads(2)
    _fold(owner.org_id)
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == owner.org_id).values(timezone="Asia/Tokyo"))
    assert _queued(owner.org_id) == set(leads)


def test_a_rebuild_takes_the_organizations_queue_with_it():
    owner, _ = _owner_with_leads(2)
    with get_engine().begin() as conn:
        rebuild_rollups(conn, owner.org_id)
    assert _queued(owner.org_id) == set()
    assert _facts(owner.org_id) == 2


def test_the_job_folds_every_organization_and_says_what_is_left():
    first, _ = _owner_with_leads(1)
    second, _ = _owner_with_leads(2)
    result = run_fold_job()
    assert result["folded"] >= 3 and result["pending"] == 0
    assert _queued(first.org_id) == set() and _queued(second.org_id) == set()


def test_the_job_out_of_time_folds_nothing_and_loses_nothing():
    owner, leads = _owner_with_leads(1)
    result = run_fold_job(seconds=0)
    assert result["folded"] == 0 and result["pending"] >= 1
    assert _queued(owner.org_id) == set(leads)


def test_the_job_runs_through_task_lifecycle_on_its_schedule_payload():
    from task_lifecycle.handler import lambda_handler

    owner, _ = _owner_with_leads(1)
    result = lambda_handler({"job": "analytics_fold"}, lambda_context())
    assert result["job"] == "analytics_fold" and result["pending"] == 0
    with get_engine().connect() as conn:
        reached = conn.execute(
            select(func.sum(analytics_daily_funnel.c.leads)).where(
                analytics_daily_funnel.c.organization_id == owner.org_id
            )
        ).scalar_one()
    assert reached == 1


def test_a_statement_queues_one_row_for_all_its_leads():
    owner = make_caller(role="owner")
    board = make_board(owner.org_id, default=True)
    leads = [create_lead(owner, f"Moved {n}")["id"] for n in range(3)]
    _fold(owner.org_id)
    response = call_api(
        "POST",
        f"{leads_path(owner.org_id)}/bulk-move-stage",
        sub=owner.sub,
        body={"stageId": str(board.stages["contacted"]), "leadIds": leads},
    )
    assert response.status == 200, response.body
    with get_engine().connect() as conn:
        rows = (
            conn.execute(
                select(analytics_pending_batches.c.lead_ids).where(
                    analytics_pending_batches.c.organization_id == owner.org_id
                )
            )
            .scalars()
            .all()
        )
    assert [sorted(map(str, row)) for row in rows] == [sorted(leads)]


def test_a_fold_splits_a_batch_larger_than_its_limit_and_keeps_the_rest_queued():
    owner, leads = _owner_with_leads(1)
    _fold(owner.org_id)
    more = [str(uuid.uuid4()) for _ in range(4)]
    with get_engine().begin() as conn:
        conn.execute(insert(analytics_pending_batches).values(organization_id=owner.org_id, lead_ids=[*leads, *more]))
    assert _fold(owner.org_id, limit=2) == 2
    assert len(_queued(owner.org_id)) == 3
    assert _fold(owner.org_id) == 3
    assert _queued(owner.org_id) == set()


def test_users_are_never_deleted_so_histories_keep_naming_them():
    owner = make_caller(role="owner")
    with pytest.raises(DBAPIError, match="users are never deleted"), get_engine().begin() as conn:
        conn.execute(delete(users).where(users.c.id == owner.user.id))
