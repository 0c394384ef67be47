"""Two staff members set the same lead's follow-up at once (issue 5 "Done when"): every write takes the lead's
row before the task's, so they queue — one open contact task, no deadlock, and the write that committed
last is what the lead and its task both say. The same holds for a follow-up write racing a task-side write."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

from leadcrm.directory.access import resolve_actor
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.work import follow_ups, tasks
from leadcrm.work.rules.follow_ups import FollowUp, TaskDue, organization_zone, task_due_for
from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import lead_tasks
from tests.support.lead_moves_helpers import create_lead, lead_row

ROUNDS = 10


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes after commit; the bus exists."""


def _all_at_once(works: list[Callable[[], Any]]) -> list[Any]:
    start = threading.Barrier(len(works), timeout=30)
    results: list[Any] = [None] * len(works)
    errors: list[BaseException] = []

    def run(slot: int) -> None:
        try:
            start.wait()
            results[slot] = works[slot]()
        except BaseException as error:  # examined on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(len(works))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a write never finished (deadlock?)"
    if errors:
        raise errors[0]
    return results


def _set(engine: Any, sub: str, org_id: Any, lead_id: Any, follow_up: FollowUp) -> None:
    with UnitOfWork(engine) as uow:
        actor = resolve_actor(uow.connection, sub, org_id)
        follow_ups.set_follow_up(uow.connection, actor, lead_id, follow_up)
        uow.commit()


def _complete(engine: Any, sub: str, org_id: Any, task_id: Any) -> None:
    with UnitOfWork(engine) as uow:
        actor = resolve_actor(uow.connection, sub, org_id)
        tasks.close_task(uow, actor, task_id, "completed")
        uow.commit()


def test_two_staff_setting_one_leads_follow_up_at_once_leave_one_open_task_and_the_last_write(private_engine):
    owner = make_caller(role="owner")
    coach = make_caller(role="coach", organization=owner.organization)
    for round_number in range(ROUNDS):
        lead_id = create_lead(owner, f"Race {round_number}")["id"]
        base = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
        by_owner = FollowUp(at=base + timedelta(hours=1), type="call")
        by_coach = FollowUp(at=base + timedelta(days=3), type="email", note="coach")
        _all_at_once(
            [
                partial(_set, private_engine, owner.sub, owner.org_id, lead_id, by_owner),
                partial(_set, private_engine, coach.sub, owner.org_id, lead_id, by_coach),
            ]
        )

        [task] = lead_tasks(lead_id, open_only=True)
        assert len(lead_tasks(lead_id)) == 1
        row = lead_row(lead_id)
        final = FollowUp(row["next_action_at"], row["next_action_type"], row["next_action_note"])
        assert final in (by_owner, by_coach)
        # The later write won on both sides of the pair: the task is due where the lead's follow-up is.
        assert TaskDue(task["due_date"], task["due_time"]) == task_due_for(final.at, organization_zone("UTC"))


def test_a_follow_up_set_racing_the_tasks_completion_never_deadlocks_and_stays_consistent(private_engine):
    owner = make_caller(role="owner")
    for round_number in range(ROUNDS):
        lead_id = create_lead(owner, f"Race {round_number}")["id"]
        [task] = lead_tasks(lead_id)
        at = datetime.now(UTC).replace(microsecond=0) + timedelta(days=4)
        _all_at_once(
            [
                partial(_set, private_engine, owner.sub, owner.org_id, lead_id, FollowUp(at=at, type="call", note="x")),
                partial(_complete, private_engine, owner.sub, owner.org_id, task["id"]),
            ]
        )
        open_tasks = lead_tasks(lead_id, open_only=True)
        row = lead_row(lead_id)
        if row["next_action_at"] is None:
            # completion came last: it cleared the follow-up that the set had moved the task onto.
            assert open_tasks == []
        else:
            # the set came last: the task completed first, so the set made a new one for the follow-up.
            [open_task] = open_tasks
            assert open_task["due_date"] == task_due_for(at, organization_zone("UTC")).due_date
