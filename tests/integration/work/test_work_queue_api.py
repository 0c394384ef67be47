"""GET /organizations/{orgId}/leads/queue: the open leads that need action, each with its reasons and tier,
ranked by tier then time, with filters, keyset pages, gates and bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from leadcrm.directory.access import resolve_actor
from leadcrm.platform.assignee import Assignee
from leadcrm.platform.db.engine import get_engine
from leadcrm.work.queue import QueueFilters, decode_queue_cursor, queue_page
from tests.support.api import call_api
from tests.support.attention_helpers import attention_lead, set_timezone
from tests.support.database import count_statements
from tests.support.factories import make_caller, make_membership, make_organization, make_user
from tests.support.lead_list_helpers import as_str, make_board


@pytest.fixture
def caller():
    return make_caller(role="owner")


@pytest.fixture
def board(caller):
    return make_board(caller.org_id, "Sales", default=True)


def _path(org_id) -> str:
    return f"/organizations/{org_id}/leads/queue"


def _queue(caller, query=None):
    response = call_api("GET", _path(caller.org_id), sub=caller.sub, query=query)
    assert response.status == 200, response.body
    return response


def _ids(response) -> list[str]:
    return [item["id"] for item in response.data]


def _item(response, lead_id) -> dict:
    return next(item for item in response.data if item["id"] == str(lead_id))


def _now() -> datetime:
    return datetime.now(UTC)


def _service_page(caller, now, **filters):
    with get_engine().connect() as conn:
        actor = resolve_actor(conn, caller.sub, caller.org_id)
        return queue_page(conn, actor, QueueFilters(**filters), now=now)


# -- reasons ---------------------------------------------------------------------------------------------------


def test_a_lead_needing_nothing_is_not_in_the_queue(caller, board):
    attention_lead(board, assigned_to_user_id=caller.user.id)
    assert _queue(caller).data == []


def test_an_unassigned_open_lead_is_in_the_queue_as_unassigned(caller, board):
    lead = attention_lead(board)
    item = _item(_queue(caller), lead)
    assert item["reasons"] == ["unassigned"]
    assert item["tier"] == 3


def test_a_new_lead_untouched_past_the_sla_is_new_untouched_and_hot(caller, board):
    lead = attention_lead(
        board, status="new", created_at=_now() - timedelta(hours=1), assigned_to_user_id=caller.user.id
    )
    item = _item(_queue(caller), lead)
    assert (item["reasons"], item["tier"]) == (["new_untouched"], 0)


def test_a_new_lead_within_the_sla_is_not_yet_in_the_queue(caller, board):
    attention_lead(board, status="new", created_at=_now() - timedelta(minutes=5), assigned_to_user_id=caller.user.id)
    assert _queue(caller).data == []


def test_an_overdue_follow_up_is_follow_up_overdue(caller, board):
    lead = attention_lead(
        board, next_action_at=_now() - timedelta(days=2), next_action_type="email", assigned_to_user_id=caller.user.id
    )
    item = _item(_queue(caller), lead)
    assert (item["reasons"], item["tier"]) == (["follow_up_overdue"], 1)


def test_a_follow_up_today_in_the_organizations_timezone_is_due_today(caller, board):
    # Pinned: 22:30 UTC on March 10 is already March 11 in Jerusalem (UTC+2): 23:00 UTC is "today" there.
    set_timezone(caller.org_id, "Asia/Jerusalem")
    now = datetime(2026, 3, 10, 22, 30, tzinfo=UTC)
    lead = attention_lead(
        board,
        created_at=now - timedelta(days=30),
        next_action_at=datetime(2026, 3, 10, 23, 0, tzinfo=UTC),
        next_action_type="email",
        assigned_to_user_id=caller.user.id,
    )
    items = _service_page(caller, now).items
    assert [(i["id"], i["reasons"]) for i in items] == [(lead, ["follow_up_due_today"])]
    # 21:30 UTC on March 10 is 23:30 on March 10 there: yesterday, so overdue (in UTC it would be today).
    earlier = attention_lead(
        board,
        created_at=now - timedelta(days=30),
        next_action_at=datetime(2026, 3, 10, 21, 30, tzinfo=UTC),
        next_action_type="email",
        assigned_to_user_id=caller.user.id,
    )
    reasons = {i["id"]: i["reasons"] for i in _service_page(caller, now).items}
    assert reasons[earlier] == ["follow_up_overdue"]


def test_the_intake_call_never_counts_as_overdue(caller, board):
    created = _now() - timedelta(days=3)
    lead = attention_lead(
        board,
        status="contacted",
        created_at=created,
        next_action_at=created,
        next_action_type="call",
        assigned_to_user_id=caller.user.id,
    )
    assert str(lead) not in _ids(_queue(caller))


def test_the_return_call_never_counts_as_overdue_and_the_lead_is_returned(caller, board):
    returned = _now() - timedelta(hours=30)
    lead = attention_lead(
        board,
        status="new",
        returned_at=returned,
        returned_via="meta",
        returned_from_status="lost",
        next_action_at=returned,
        next_action_type="call",
        last_contacted_at=returned - timedelta(days=60),
        assigned_to_user_id=caller.user.id,
    )
    item = _item(_queue(caller), lead)
    assert (item["reasons"], item["tier"]) == (["returned"], 2)
    assert (item["returnedVia"], item["returnedFromStatus"]) == ("meta", "lost")


def test_a_returned_lead_is_hot_in_its_first_24_hours(caller, board):
    returned = _now() - timedelta(hours=2)
    lead = attention_lead(
        board,
        status="new",
        returned_at=returned,
        next_action_at=returned,
        next_action_type="call",
        last_contacted_at=returned - timedelta(days=60),
        assigned_to_user_id=caller.user.id,
    )
    assert _item(_queue(caller), lead)["tier"] == 0


def test_a_return_older_than_7_days_is_no_longer_a_reason(caller, board):
    returned = _now() - timedelta(days=8)
    attention_lead(
        board,
        status="new",
        returned_at=returned,
        last_contacted_at=returned - timedelta(days=60),
        assigned_to_user_id=caller.user.id,
    )
    assert _queue(caller).data == []


def test_a_returned_lead_tried_since_its_return_is_not_returned(caller, board):
    returned = _now() - timedelta(hours=3)
    attention_lead(
        board,
        status="contacted",
        returned_at=returned,
        last_contact_attempt_at=_now() - timedelta(hours=1),
        assigned_to_user_id=caller.user.id,
    )
    assert _queue(caller).data == []


def test_an_unanswered_inbound_is_inbound_unanswered(caller, board):
    lead = attention_lead(board, last_inbound_at=_now() - timedelta(hours=1), assigned_to_user_id=caller.user.id)
    item = _item(_queue(caller), lead)
    assert (item["reasons"], item["tier"]) == (["inbound_unanswered"], 0)


def test_an_answered_inbound_is_not_a_reason(caller, board):
    attention_lead(
        board,
        last_inbound_at=_now() - timedelta(hours=2),
        last_outbound_at=_now() - timedelta(hours=1),
        assigned_to_user_id=caller.user.id,
    )
    assert _queue(caller).data == []


def test_a_lead_with_several_reasons_lists_them_all_once(caller, board):
    lead = attention_lead(
        board,
        status="new",
        created_at=_now() - timedelta(hours=1),
        next_action_at=_now() - timedelta(days=1),
        next_action_type="email",
    )
    response = _queue(caller)
    assert _ids(response) == [str(lead)]
    assert _item(response, lead)["reasons"] == ["follow_up_overdue", "new_untouched", "unassigned"]


@pytest.mark.parametrize("status", ["converted", "customer", "lost", "frozen"])
def test_closed_and_won_leads_are_not_in_the_queue(caller, board, status):
    attention_lead(board, status=status, next_action_at=_now() - timedelta(days=1), next_action_type="email")
    assert _queue(caller).data == []


def test_archived_leads_are_not_in_the_queue(caller, board):
    attention_lead(board, archived_at=_now())
    assert _queue(caller).data == []


def test_paused_leads_are_not_in_the_queue(caller, board):
    attention_lead(board, paused_at=_now())
    assert _queue(caller).data == []


def test_another_organizations_leads_are_not_in_the_queue(caller, board):
    other = make_board(make_organization().id, default=True)
    attention_lead(other)
    assert _queue(caller).data == []


# -- ranking -----------------------------------------------------------------------------------------------------


def test_the_queue_ranks_by_tier_then_time(caller, board):
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    me = caller.user.id
    old = now - timedelta(days=60)
    backlog = attention_lead(board, created_at=now - timedelta(days=40))
    cooling_return = attention_lead(
        board,
        status="new",
        created_at=old,
        returned_at=now - timedelta(days=3),
        last_contacted_at=old,
        assigned_to_user_id=me,
    )
    newest_hot_return = attention_lead(
        board,
        status="new",
        created_at=old,
        returned_at=now - timedelta(hours=1),
        last_contacted_at=old,
        assigned_to_user_id=me,
    )
    older_hot_return = attention_lead(
        board,
        status="new",
        created_at=old,
        returned_at=now - timedelta(hours=5),
        last_contacted_at=old,
        assigned_to_user_id=me,
    )
    most_overdue = attention_lead(
        board, created_at=old, next_action_at=now - timedelta(days=4), next_action_type="email", assigned_to_user_id=me
    )
    due_today = attention_lead(
        board, created_at=old, next_action_at=now + timedelta(hours=2), next_action_type="email", assigned_to_user_id=me
    )
    items = _service_page(caller, now).items
    assert [i["id"] for i in items] == [
        newest_hot_return,
        older_hot_return,
        most_overdue,
        due_today,
        cooling_return,
        backlog,
    ]
    assert [i["tier"] for i in items] == [0, 0, 1, 1, 2, 3]


def test_a_lead_ranks_by_its_most_urgent_reason(caller, board):
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    follow_up = attention_lead(
        board,
        created_at=now - timedelta(days=30),
        next_action_at=now - timedelta(days=1),
        next_action_type="email",
        assigned_to_user_id=caller.user.id,
    )
    unassigned_and_hot = attention_lead(board, status="new", created_at=now - timedelta(hours=3))
    assert [i["id"] for i in _service_page(caller, now).items] == [unassigned_and_hot, follow_up]


# -- pages -----------------------------------------------------------------------------------------------------


def test_pages_follow_one_another_without_gaps_or_repeats(caller, board):
    now = _now()
    me = caller.user.id
    expected = set()
    for hours in range(1, 6):
        expected.add(
            attention_lead(board, status="new", created_at=now - timedelta(hours=hours), assigned_to_user_id=me)
        )
        expected.add(
            attention_lead(
                board, next_action_at=now - timedelta(days=hours), next_action_type="email", assigned_to_user_id=me
            )
        )
        expected.add(attention_lead(board, created_at=now - timedelta(days=10 + hours)))
        expected.add(attention_lead(board, status="new", created_at=now - timedelta(days=2, hours=hours)))
    full = _ids(_queue(caller, {"limit": "100"}))
    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": "3"} | ({"cursor": cursor} if cursor else {})
        response = _queue(caller, query)
        seen += _ids(response)
        cursor = response.body["nextCursor"]
        if cursor is None:
            break
    assert seen == full
    assert set(seen) == set(as_str(*expected))


def test_the_last_page_has_no_next_cursor(caller, board):
    attention_lead(board)
    assert _queue(caller, {"limit": "1"}).body["nextCursor"] is None


def test_a_page_costs_two_statements_whatever_its_size(caller, board):
    for hours in range(1, 30):
        attention_lead(board, created_at=_now() - timedelta(days=hours))
    counts = []
    for limit in (1, 50):
        with count_statements(get_engine()) as log:
            _queue(caller, {"limit": str(limit)})
        counts.append(len(log))
    # resolve_actor, the organization's timezone, the page
    assert counts == [3, 3]


# -- filters -----------------------------------------------------------------------------------------------------


def test_assignee_me_lists_only_the_callers_leads(caller, board):
    mine = attention_lead(
        board, next_action_at=_now() - timedelta(days=1), next_action_type="email", assigned_to_user_id=caller.user.id
    )
    other_user = make_user()
    make_membership(caller.organization, other_user, role="coach")
    attention_lead(
        board, next_action_at=_now() - timedelta(days=1), next_action_type="email", assigned_to_user_id=other_user.id
    )
    attention_lead(board)
    assert _ids(_queue(caller, {"assignee": "me"})) == as_str(mine)


def test_assignee_unassigned_lists_only_ownerless_leads(caller, board):
    attention_lead(
        board, next_action_at=_now() - timedelta(days=1), next_action_type="email", assigned_to_user_id=caller.user.id
    )
    nobody = attention_lead(board)
    assert _ids(_queue(caller, {"assignee": "unassigned"})) == as_str(nobody)


def test_reason_lists_only_leads_with_that_reason(caller, board):
    overdue_and_unassigned = attention_lead(board, next_action_at=_now() - timedelta(days=2), next_action_type="email")
    unassigned = attention_lead(board)
    attention_lead(board, status="new", created_at=_now() - timedelta(hours=1), assigned_to_user_id=caller.user.id)
    assert _ids(_queue(caller, {"reason": "follow_up_overdue"})) == as_str(overdue_and_unassigned)
    assert set(_ids(_queue(caller, {"reason": "unassigned"}))) == set(as_str(overdue_and_unassigned, unassigned))


def test_reason_due_today_excludes_overdue_follow_ups(caller, board):
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    today = attention_lead(
        board, created_at=now - timedelta(days=9), next_action_at=now + timedelta(hours=1), next_action_type="email"
    )
    attention_lead(
        board, created_at=now - timedelta(days=9), next_action_at=now - timedelta(days=1), next_action_type="email"
    )
    from leadcrm.work.rules.attention import Reason

    assert [i["id"] for i in _service_page(caller, now, reason=Reason.FOLLOW_UP_DUE_TODAY).items] == [today]


def test_assignee_me_on_the_service_skips_nobodys_leads(caller, board):
    attention_lead(board)
    assert _service_page(caller, _now(), assignee=Assignee(caller.user.id)).items == []


# -- gates and bad input ---------------------------------------------------------------------------------------


def test_a_member_may_not_read_the_queue(caller, board):
    member = make_caller(role="member", organization=caller.organization)
    response = call_api("GET", _path(caller.org_id), sub=member.sub)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_a_coach_may_read_the_queue(caller, board):
    coach = make_caller(role="coach", organization=caller.organization)
    assert call_api("GET", _path(caller.org_id), sub=coach.sub).status == 200


def test_a_non_member_may_not_read_the_queue(caller, board):
    stranger = make_caller()
    response = call_api("GET", _path(caller.org_id), sub=stranger.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_an_organization_without_lead_management_is_refused(board):
    caller = make_caller(role="owner", features={})
    response = call_api("GET", _path(caller.org_id), sub=caller.sub)
    assert (response.status, response.error_code) == (403, "FEATURE_DISABLED")


def test_the_queue_route_is_not_taken_for_a_lead_id(caller, board):
    response = _queue(caller)
    assert isinstance(response.data, list)


@pytest.mark.parametrize(
    "query",
    [
        {"reason": "bored"},
        {"assignee": "someone-else"},
        {"limit": "0"},
        {"limit": "201"},
        {"limit": "many"},
        {"cursor": "not-a-cursor"},
        {"cursor": "W10"},
        {"cursor": "x" * 201},
        {"cursor": "WyIxIiwibm90LWEtdXVpZCIsIiJd"},
    ],
)
def test_malformed_queries_are_400(caller, board, query):
    response = call_api("GET", _path(caller.org_id), sub=caller.sub, query=query)
    assert response.status == 400, response.body


def test_a_cursor_from_another_reason_is_refused(caller, board):
    for _ in range(3):
        attention_lead(board)
    cursor = _queue(caller, {"limit": "1"}).body["nextCursor"]
    response = call_api("GET", _path(caller.org_id), sub=caller.sub, query={"cursor": cursor, "reason": "unassigned"})
    assert (response.status, response.error_code) == (400, "INVALID_CURSOR")
    assert decode_queue_cursor(cursor, None).id is not None
