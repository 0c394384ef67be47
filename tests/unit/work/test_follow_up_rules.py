"""The follow-up ⇄ task rules (spec "One object": taskMirrorsFollowUp, the automatic seeds, due dates)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from leadcrm.work.rules.follow_ups import (
    FollowUp,
    LeadClock,
    TaskDue,
    TouchFollowUpAction,
    TouchFollowUpPlan,
    follow_up_at_for_due,
    is_auto_seed,
    organization_zone,
    plan_touch_follow_up,
    task_due_for,
    task_mirrors_follow_up,
)

JERUSALEM = ZoneInfo("Asia/Jerusalem")
CREATED = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
RETURNED = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
CLOCK = LeadClock(created_at=CREATED, returned_at=RETURNED)
# 2026-03-10 14:30 in Jerusalem (UTC+2 in March before DST)
AT = datetime(2026, 3, 10, 12, 30, tzinfo=UTC)


def test_the_intake_call_is_a_seed():
    assert is_auto_seed(FollowUp(CREATED, "call"), CLOCK)


def test_the_return_call_is_a_seed():
    assert is_auto_seed(FollowUp(RETURNED, "call"), CLOCK)


@pytest.mark.parametrize(
    "follow_up",
    [
        FollowUp(CREATED, "whatsapp"),
        FollowUp(CREATED + timedelta(seconds=1), "call"),
        None,
    ],
)
def test_anything_a_person_set_is_not_a_seed(follow_up):
    assert not is_auto_seed(follow_up, CLOCK)


def test_a_lead_without_a_follow_up_is_mirrored_by_its_task():
    assert task_mirrors_follow_up(None, CLOCK, TaskDue(date(2026, 1, 1)), UTC)


def test_a_seed_is_mirrored_whatever_the_tasks_date():
    assert task_mirrors_follow_up(FollowUp(CREATED, "call"), CLOCK, TaskDue(date(2030, 1, 1), time(7)), UTC)


def test_a_follow_up_on_the_tasks_org_local_date_is_mirrored_by_a_task_without_time():
    assert task_mirrors_follow_up(FollowUp(AT, "email"), CLOCK, TaskDue(date(2026, 3, 10)), JERUSALEM)


def test_the_org_local_date_decides_not_the_utc_one():
    late = datetime(2026, 3, 10, 23, 0, tzinfo=UTC)  # already the 11th in Jerusalem
    assert not task_mirrors_follow_up(FollowUp(late, "call"), CLOCK, TaskDue(date(2026, 3, 10)), JERUSALEM)
    assert task_mirrors_follow_up(FollowUp(late, "call"), CLOCK, TaskDue(date(2026, 3, 11)), JERUSALEM)


def test_a_task_with_a_time_needs_the_same_local_time():
    follow_up = FollowUp(AT, "call")
    assert task_mirrors_follow_up(follow_up, CLOCK, TaskDue(date(2026, 3, 10), time(14, 30)), JERUSALEM)
    assert not task_mirrors_follow_up(follow_up, CLOCK, TaskDue(date(2026, 3, 10), time(15, 0)), JERUSALEM)


def test_a_follow_up_moved_to_another_day_is_not_mirrored_by_the_old_task():
    assert not task_mirrors_follow_up(FollowUp(AT, "call"), CLOCK, TaskDue(date(2026, 3, 9)), JERUSALEM)


def test_a_task_without_a_due_date_does_not_mirror_a_set_follow_up():
    assert not task_mirrors_follow_up(FollowUp(AT, "call"), CLOCK, TaskDue(None), JERUSALEM)


def test_the_task_is_due_on_the_local_date_at_the_local_time():
    assert task_due_for(AT, JERUSALEM) == TaskDue(date(2026, 3, 10), time(14, 30))


def test_a_follow_up_at_local_midnight_makes_a_whole_day_task():
    midnight = datetime(2026, 3, 10, 0, 0, tzinfo=JERUSALEM)
    assert task_due_for(midnight, JERUSALEM) == TaskDue(date(2026, 3, 10), None)


def test_a_rescheduled_task_with_a_time_moves_the_follow_up_there():
    at = follow_up_at_for_due(TaskDue(date(2026, 3, 12), time(9, 15)), JERUSALEM, FollowUp(AT, "call"))
    assert at == datetime(2026, 3, 12, 9, 15, tzinfo=JERUSALEM)


def test_a_rescheduled_task_without_time_keeps_the_follow_ups_time_of_day():
    at = follow_up_at_for_due(TaskDue(date(2026, 3, 12)), JERUSALEM, FollowUp(AT, "call"))
    assert at.astimezone(JERUSALEM).replace(tzinfo=None) == datetime(2026, 3, 12, 14, 30)


def test_a_rescheduled_task_of_a_lead_without_follow_up_lands_at_midnight():
    assert follow_up_at_for_due(TaskDue(date(2026, 3, 12)), UTC, None) == datetime(2026, 3, 12, tzinfo=UTC)


def test_an_unknown_timezone_reads_as_utc():
    assert organization_zone("Mars/Olympus_Mons") is UTC
    assert organization_zone(None).utcoffset(AT) == timedelta(0)


@pytest.mark.parametrize("human", [True, False])
@pytest.mark.parametrize("seed", [True, False])
def test_replace_and_clear_complete_the_task_whatever_the_contact(human, seed):
    assert plan_touch_follow_up(TouchFollowUpAction.REPLACE, human_contact=human, current_is_seed=seed) == (
        TouchFollowUpPlan(complete_task=True, clear=False, replace=True)
    )
    assert plan_touch_follow_up(TouchFollowUpAction.CLEAR, human_contact=human, current_is_seed=seed) == (
        TouchFollowUpPlan(complete_task=True, clear=True, replace=False)
    )


def test_keep_retires_the_seed_on_the_first_real_contact():
    plan = plan_touch_follow_up(TouchFollowUpAction.KEEP, human_contact=True, current_is_seed=True)
    assert plan == TouchFollowUpPlan(complete_task=True, clear=True, replace=False)


@pytest.mark.parametrize(("human", "seed"), [(False, True), (True, False), (False, False)])
def test_keep_changes_nothing_otherwise(human, seed):
    assert not plan_touch_follow_up(
        TouchFollowUpAction.KEEP, human_contact=human, current_is_seed=seed
    ).changes_anything
