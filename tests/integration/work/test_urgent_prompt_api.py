"""The morning urgent prompt: GET …/urgent-prompt, POST …/urgent-prompt/seen, POST …/urgent-prompt/snooze."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import select

from leadcrm.directory.access import resolve_actor
from leadcrm.platform.db.engine import get_engine
from leadcrm.work.rules.attention import SnoozeUntil
from leadcrm.work.tables import staff_prompt_states
from leadcrm.work.urgent_prompt import mark_seen, prompt_view, snooze, urgent_counts
from tests.support.api import call_api
from tests.support.attention_helpers import attention_lead, make_task, set_timezone
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import make_board


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def board(owner):
    return make_board(owner.org_id, "Sales", default=True)


def _path(org_id, action: str = "") -> str:
    return f"/organizations/{org_id}/urgent-prompt" + (f"/{action}" if action else "")


def _prompt(caller) -> dict:
    response = call_api("GET", _path(caller.org_id), sub=caller.sub)
    assert response.status == 200, response.body
    return response.data


def _today() -> date:
    return datetime.now(UTC).date()  # organizations default to UTC


def _overdue_tasks(caller, n: int) -> None:
    for _ in range(n):
        make_task(caller.org_id, assignee=caller.user.id, due_date=_today() - timedelta(days=1))


def _state(caller):
    with get_engine().connect() as conn:
        return conn.execute(
            select(staff_prompt_states).where(
                staff_prompt_states.c.organization_id == caller.org_id, staff_prompt_states.c.user_id == caller.user.id
            )
        ).first()


# -- items --------------------------------------------------------------------------------------------------------


def test_the_callers_overdue_and_due_today_tasks_are_counted(owner, board):
    _overdue_tasks(owner, 2)
    make_task(owner.org_id, assignee=owner.user.id, due_date=_today())
    make_task(owner.org_id, assignee=owner.user.id, due_date=_today() + timedelta(days=1))
    data = _prompt(owner)
    assert data["counts"] == {"overdueTasks": 2, "dueTodayTasks": 1, "leadsNeedingAttention": 0}
    assert data["show"] is True


def test_other_peoples_and_closed_tasks_are_not_counted(owner, board):
    colleague = make_caller(role="coach", organization=owner.organization)
    yesterday = _today() - timedelta(days=1)
    make_task(owner.org_id, assignee=colleague.user.id, due_date=yesterday)
    make_task(owner.org_id, assignee=owner.user.id, due_date=yesterday, status="completed")
    make_task(owner.org_id, assignee=owner.user.id, due_date=yesterday, status="cancelled")
    make_task(owner.org_id, assignee=owner.user.id, due_date=yesterday, deleted=True)
    make_task(owner.org_id, assignee=owner.user.id, due_date=None)
    assert _prompt(owner)["counts"]["overdueTasks"] == 0
    make_task(owner.org_id, assignee=owner.user.id, due_date=yesterday, status="in_progress")
    assert _prompt(owner)["counts"]["overdueTasks"] == 1


def test_task_days_are_the_organizations(owner, board):
    # 23:30 UTC on March 10 is March 11 in Jerusalem: a task due March 10 is overdue there, due today in UTC.
    now = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)
    make_task(owner.org_id, assignee=owner.user.id, due_date=date(2026, 3, 10))
    with get_engine().connect() as conn:
        utc = urgent_counts(conn, owner.org_id, owner.user.id, "owner", now=now)
    set_timezone(owner.org_id, "Asia/Jerusalem")
    with get_engine().connect() as conn:
        jerusalem = urgent_counts(conn, owner.org_id, owner.user.id, "owner", now=now)
    assert (utc.overdue_tasks, utc.due_today_tasks) == (0, 1)
    assert (jerusalem.overdue_tasks, jerusalem.due_today_tasks) == (1, 0)


def test_owners_count_leads_in_an_urgent_state(owner, board):
    now = datetime.now(UTC)
    me = owner.user.id
    attention_lead(board, status="new", created_at=now - timedelta(hours=1), assigned_to_user_id=me)
    attention_lead(board, last_inbound_at=now - timedelta(hours=1), assigned_to_user_id=me)
    attention_lead(board, next_action_at=now - timedelta(days=1), next_action_type="email", assigned_to_user_id=me)
    # not urgent: unassigned alone, a future follow-up, the intake call, archived
    attention_lead(board)
    attention_lead(board, next_action_at=now + timedelta(days=3), next_action_type="email", assigned_to_user_id=me)
    created = now - timedelta(days=2)
    attention_lead(board, created_at=created, next_action_at=created, next_action_type="call", assigned_to_user_id=me)
    attention_lead(board, status="new", created_at=now - timedelta(hours=1), archived_at=now)
    assert _prompt(owner)["counts"]["leadsNeedingAttention"] == 3


def test_a_lead_with_several_urgent_reasons_counts_once(owner, board):
    now = datetime.now(UTC)
    attention_lead(
        board,
        status="new",
        created_at=now - timedelta(hours=1),
        last_inbound_at=now - timedelta(minutes=30),
        next_action_at=now - timedelta(days=1),
        next_action_type="email",
    )
    assert _prompt(owner)["counts"]["leadsNeedingAttention"] == 1


def _urgent_by(reason: str, now: datetime) -> dict:
    return {
        "inbound": {"last_inbound_at": now - timedelta(hours=1)},
        "untouched": {"status": "new", "created_at": now - timedelta(hours=1)},
        "follow_up": {"next_action_at": now - timedelta(days=1), "next_action_type": "email"},
    }[reason]


@pytest.mark.parametrize(
    "reasons", [("inbound", "untouched"), ("inbound", "follow_up"), ("untouched", "follow_up")], ids="+".join
)
def test_a_lead_with_any_two_urgent_reasons_counts_once(owner, board, reasons):
    now = datetime.now(UTC)
    columns = {key: value for reason in reasons for key, value in _urgent_by(reason, now).items()}
    attention_lead(board, **columns)
    assert _prompt(owner)["counts"]["leadsNeedingAttention"] == 1


def _urgent_leads(board, n: int) -> None:
    for _ in range(n):
        attention_lead(board, status="new", created_at=datetime.now(UTC) - timedelta(hours=1))


def test_leads_needing_attention_are_counted_up_to_100(owner, board):
    _urgent_leads(board, 99)
    assert _prompt(owner)["counts"]["leadsNeedingAttention"] == 99
    _urgent_leads(board, 2)
    assert _prompt(owner)["counts"]["leadsNeedingAttention"] == 100  # 101: the dashboard shows 99+


def test_past_the_cap_review_still_goes_to_leads_only_when_they_outnumber_the_tasks(owner, board):
    _overdue_tasks(owner, 101)
    _urgent_leads(board, 102)
    data = _prompt(owner)
    assert data["counts"] == {"overdueTasks": 101, "dueTodayTasks": 0, "leadsNeedingAttention": 100}
    assert data["reviewTarget"] == "leads"
    _overdue_tasks(owner, 1)
    assert _prompt(owner)["reviewTarget"] == "tasks"  # 102 tasks, 102 leads: leads do not outnumber them


def test_a_due_follow_up_with_an_open_task_counts_as_the_task_never_as_a_lead(owner, board):
    now = datetime.now(UTC)
    lead = attention_lead(
        board, next_action_at=now - timedelta(days=1), next_action_type="email", assigned_to_user_id=owner.user.id
    )
    assert _prompt(owner)["counts"] == {"overdueTasks": 0, "dueTodayTasks": 0, "leadsNeedingAttention": 1}
    make_task(
        owner.org_id,
        assignee=owner.user.id,
        due_date=_today() - timedelta(days=1),
        type="contact_lead",
        linked_lead_id=lead,
    )
    assert _prompt(owner)["counts"] == {"overdueTasks": 1, "dueTodayTasks": 0, "leadsNeedingAttention": 0}


def test_a_due_follow_up_whose_task_is_closed_counts_as_a_lead_again(owner, board):
    now = datetime.now(UTC)
    lead = attention_lead(board, next_action_at=now - timedelta(days=1), next_action_type="email")
    make_task(
        owner.org_id,
        assignee=owner.user.id,
        due_date=_today(),
        type="contact_lead",
        linked_lead_id=lead,
        status="completed",
    )
    assert _prompt(owner)["counts"]["leadsNeedingAttention"] == 1


def test_coaches_see_their_tasks_but_no_lead_counts(owner, board):
    coach = make_caller(role="coach", organization=owner.organization)
    attention_lead(board, status="new", created_at=datetime.now(UTC) - timedelta(hours=1))
    _overdue_tasks(coach, 1)
    data = _prompt(coach)
    assert data["counts"] == {"overdueTasks": 1, "dueTodayTasks": 0, "leadsNeedingAttention": 0}
    assert data["show"] is True


def test_admins_count_leads_like_owners(owner, board):
    admin = make_caller(role="admin", organization=owner.organization)
    attention_lead(board, status="new", created_at=datetime.now(UTC) - timedelta(hours=1))
    assert _prompt(admin)["counts"]["leadsNeedingAttention"] == 1


def test_members_always_get_show_false(owner, board):
    member = make_caller(role="member", organization=owner.organization)
    _overdue_tasks(member, 3)
    data = _prompt(member)
    assert data["show"] is False
    assert data["blocking"] is False


def test_a_member_marking_seen_or_snoozing_stores_nothing(owner, board):
    member = make_caller(role="member", organization=owner.organization)
    assert call_api("POST", _path(owner.org_id, "seen"), sub=member.sub).status == 200
    assert call_api("POST", _path(owner.org_id, "snooze"), sub=member.sub, body={"until": "one_hour"}).status == 200
    assert _state(member) is None


# -- once a day, blocking, snooze -----------------------------------------------------------------------------


def test_nothing_to_show_is_show_false_and_seen_stores_nothing(owner, board):
    assert _prompt(owner)["show"] is False
    response = call_api("POST", _path(owner.org_id, "seen"), sub=owner.sub)
    assert response.status == 200
    assert _state(owner) is None


def test_seen_hides_the_prompt_for_the_rest_of_the_organizations_day(owner, board):
    _overdue_tasks(owner, 1)
    assert _prompt(owner)["show"] is True
    response = call_api("POST", _path(owner.org_id, "seen"), sub=owner.sub)
    assert (response.status, response.data["show"]) == (200, False)
    assert _state(owner).last_shown_on == _today()
    assert _prompt(owner)["show"] is False
    assert _prompt(owner)["counts"]["overdueTasks"] == 1


def test_the_prompt_returns_the_next_organization_day(owner, board):
    set_timezone(owner.org_id, "America/New_York")
    make_task(owner.org_id, assignee=owner.user.id, due_date=date(2026, 3, 1))
    evening = datetime(2026, 3, 10, 3, 0, tzinfo=UTC)  # March 9, 23:00 in New York
    with get_engine().begin() as conn:
        actor = resolve_actor(conn, owner.sub, owner.org_id)
        mark_seen(conn, actor, now=evening)
    with get_engine().connect() as conn:
        assert prompt_view(conn, actor, now=evening + timedelta(minutes=30)).show is False
        assert prompt_view(conn, actor, now=evening + timedelta(hours=1, minutes=30)).show is True  # March 10 there


def test_more_than_5_items_block(owner, board):
    _overdue_tasks(owner, 5)
    assert _prompt(owner)["blocking"] is False
    _overdue_tasks(owner, 1)
    assert _prompt(owner)["blocking"] is True


def test_review_target_is_leads_when_leads_outnumber_tasks(owner, board):
    _overdue_tasks(owner, 1)
    assert _prompt(owner)["reviewTarget"] == "tasks"
    for _ in range(2):
        attention_lead(board, status="new", created_at=datetime.now(UTC) - timedelta(hours=1))
    assert _prompt(owner)["reviewTarget"] == "leads"


def test_snooze_one_hour_hides_the_prompt_and_clears_seen(owner, board):
    _overdue_tasks(owner, 1)
    call_api("POST", _path(owner.org_id, "seen"), sub=owner.sub)
    before = datetime.now(UTC)
    response = call_api("POST", _path(owner.org_id, "snooze"), sub=owner.sub, body={"until": "one_hour"})
    assert response.status == 200, response.body
    state = _state(owner)
    assert state.last_shown_on is None
    assert before + timedelta(minutes=59) < state.snoozed_until <= datetime.now(UTC) + timedelta(hours=1)
    data = _prompt(owner)
    assert data["show"] is False
    assert datetime.fromisoformat(data["snoozedUntil"].replace("Z", "+00:00")) == state.snoozed_until


def test_the_prompt_returns_once_the_snooze_lapses(owner, board):
    make_task(owner.org_id, assignee=owner.user.id, due_date=date(2026, 3, 1))
    now = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
    with get_engine().begin() as conn:
        actor = resolve_actor(conn, owner.sub, owner.org_id)
        mark_seen(conn, actor, now=now)
        snooze(conn, actor, SnoozeUntil.ONE_HOUR, now=now)
    with get_engine().connect() as conn:
        assert prompt_view(conn, actor, now=now + timedelta(minutes=59)).show is False
        view = prompt_view(conn, actor, now=now + timedelta(hours=1, seconds=1))
    assert view.show is True
    assert view.snoozed_until is None


def test_snooze_tomorrow_is_8_am_organization_local(owner, board):
    set_timezone(owner.org_id, "Asia/Jerusalem")
    _overdue_tasks(owner, 1)
    now = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)  # March 11, 01:30 in Jerusalem
    with get_engine().begin() as conn:
        actor = resolve_actor(conn, owner.sub, owner.org_id)
        view = snooze(conn, actor, SnoozeUntil.TOMORROW, now=now)
    assert view.snoozed_until == datetime(2026, 3, 12, 6, 0, tzinfo=UTC)
    assert _state(owner).snoozed_until == datetime(2026, 3, 12, 6, 0, tzinfo=UTC)


# -- gates and bad input ---------------------------------------------------------------------------------------


def test_a_non_member_is_refused(owner, board):
    stranger = make_caller(role="owner")
    for method, action in (("GET", ""), ("POST", "seen")):
        response = call_api(method, _path(owner.org_id, action), sub=stranger.sub)
        assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_an_organization_without_lead_management_is_refused():
    caller = make_caller(role="owner", features={})
    response = call_api("GET", _path(caller.org_id), sub=caller.sub)
    assert (response.status, response.error_code) == (403, "FEATURE_DISABLED")


@pytest.mark.parametrize(
    "body",
    [{}, {"until": "next_week"}, {"until": 3}, {"until": "one_hour", "extra": 1}, {"until": None}],
)
def test_a_malformed_snooze_is_400(owner, board, body):
    response = call_api("POST", _path(owner.org_id, "snooze"), sub=owner.sub, body=body)
    assert response.status == 400, response.body


def test_a_snooze_body_that_is_not_json_is_400(owner, board):
    response = call_api("POST", _path(owner.org_id, "snooze"), sub=owner.sub, body="{not json")
    assert response.status == 400, response.body
