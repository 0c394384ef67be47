"""The work queue's and the urgent prompt's pure rules (leadcrm.work.rules.attention)."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

import pytest

from leadcrm.work.rules.attention import (
    DEFAULT_NEW_LEAD_SLA,
    LeadFacts,
    PromptState,
    Reason,
    ReviewTarget,
    SnoozeUntil,
    Tier,
    UrgentCounts,
    arrival_tier,
    decide_prompt,
    follow_up_reason,
    is_seed_call,
    is_urgent_for_prompt,
    lead_reasons,
    new_lead_sla,
    org_day,
    ranked_reasons,
    returned_tier,
    review_target,
    snoozed_until,
)

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
DAY = org_day(NOW, "UTC")
SLA = DEFAULT_NEW_LEAD_SLA
OWNER = uuid.uuid4()


def reasons(**facts) -> list[Reason]:
    facts.setdefault("status", "contacted")
    facts.setdefault("created_at", NOW - timedelta(days=30))
    facts.setdefault("assigned_to_user_id", OWNER)
    return lead_reasons(LeadFacts(**facts), now=NOW, day=DAY, sla=SLA)


# -- tiers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "tier"),
    [
        (timedelta(0), Tier.HOT),
        (timedelta(hours=23), Tier.HOT),
        (timedelta(hours=25), Tier.COOLING),
        (timedelta(days=6), Tier.COOLING),
        (timedelta(days=8), None),
    ],
)
def test_a_return_is_hot_for_24_hours_cooling_to_7_days_then_no_reason(age, tier):
    assert returned_tier(NOW - age, NOW) == tier


@pytest.mark.parametrize(
    ("age", "tier"),
    [
        (timedelta(0), Tier.HOT),
        (timedelta(hours=23), Tier.HOT),
        (timedelta(hours=25), Tier.COOLING),
        (timedelta(days=6), Tier.COOLING),
        (timedelta(days=8), Tier.BACKLOG),
    ],
)
def test_an_arrival_is_hot_for_24_hours_cooling_to_7_days_then_backlog(age, tier):
    assert arrival_tier(NOW - age, NOW) == tier


def test_a_returned_lead_ranks_in_the_hot_tier_during_its_first_day():
    ranked = ranked_reasons(
        LeadFacts(
            status="new",
            created_at=NOW - timedelta(days=90),
            assigned_to_user_id=OWNER,
            returned_at=NOW - timedelta(hours=2),
            last_contacted_at=NOW - timedelta(days=80),
        ),
        now=NOW,
        day=DAY,
        sla=SLA,
    )
    assert [(r.reason, r.tier) for r in ranked] == [(Reason.RETURNED, Tier.HOT)]


def test_newer_returns_rank_before_older_ones_in_the_same_tier():
    def key(hours: int):
        lead = LeadFacts(
            status="new",
            created_at=NOW - timedelta(days=90),
            assigned_to_user_id=OWNER,
            returned_at=NOW - timedelta(hours=hours),
            last_contacted_at=NOW - timedelta(days=80),
        )
        return ranked_reasons(lead, now=NOW, day=DAY, sla=SLA)[0].sort_key()

    assert key(1) < key(5) < key(30)


def test_the_most_overdue_follow_up_ranks_first():
    def key(days: int):
        lead = LeadFacts(
            status="contacted",
            created_at=NOW - timedelta(days=90),
            assigned_to_user_id=OWNER,
            next_action_at=NOW - timedelta(days=days),
            next_action_type="email",
        )
        return ranked_reasons(lead, now=NOW, day=DAY, sla=SLA)[0].sort_key()

    assert key(5) < key(2)


# -- reasons ---------------------------------------------------------------------------------------------------


def test_the_intake_call_is_never_overdue():
    created = NOW - timedelta(days=3)
    assert is_seed_call("call", created, created_at=created, returned_at=None)
    assert Reason.FOLLOW_UP_OVERDUE not in reasons(
        status="contacted", created_at=created, next_action_at=created, next_action_type="call"
    )


def test_the_return_call_is_never_overdue():
    returned = NOW - timedelta(days=3)
    assert reasons(
        status="contacted",
        returned_at=returned,
        next_action_at=returned,
        next_action_type="call",
        last_contacted_at=NOW - timedelta(days=40),
    ) == [Reason.RETURNED]


def test_a_call_set_for_another_time_is_a_real_follow_up():
    assert reasons(next_action_at=NOW - timedelta(days=2), next_action_type="call") == [Reason.FOLLOW_UP_OVERDUE]


@pytest.mark.parametrize("follow_up_type", ["email", "whatsapp", None])
def test_a_follow_up_of_another_type_at_creation_is_not_the_intake_seed(follow_up_type):
    created = NOW - timedelta(days=3)
    assert not is_seed_call(follow_up_type, created, created_at=created, returned_at=None)


def test_a_follow_up_earlier_today_is_due_today_not_overdue():
    assert follow_up_reason(DAY.starts_at + timedelta(hours=1), seed=False, day=DAY) is Reason.FOLLOW_UP_DUE_TODAY
    assert follow_up_reason(DAY.starts_at - timedelta(seconds=1), seed=False, day=DAY) is Reason.FOLLOW_UP_OVERDUE
    assert follow_up_reason(DAY.ends_at, seed=False, day=DAY) is None


def test_a_new_lead_is_untouched_only_past_the_sla():
    assert Reason.NEW_UNTOUCHED not in reasons(status="new", created_at=NOW - timedelta(minutes=14))
    assert Reason.NEW_UNTOUCHED in reasons(status="new", created_at=NOW - timedelta(minutes=15))


def test_a_tried_new_lead_is_not_untouched():
    assert reasons(status="new", created_at=NOW - timedelta(hours=2), last_contact_attempt_at=NOW) == []


def test_a_returned_lead_someone_tried_since_has_no_returned_reason():
    returned = NOW - timedelta(hours=3)
    assert reasons(status="contacted", returned_at=returned, last_contact_attempt_at=NOW - timedelta(hours=1)) == []


def test_a_returned_lead_with_a_new_follow_up_has_no_returned_reason():
    assert Reason.RETURNED not in reasons(
        status="new",
        returned_at=NOW - timedelta(hours=3),
        next_action_at=NOW + timedelta(days=1),
        next_action_type="email",
        last_contacted_at=NOW - timedelta(days=40),
    )


def test_a_returned_lead_past_contacted_has_no_returned_reason():
    assert reasons(status="callback", returned_at=NOW - timedelta(hours=3)) == []


def test_an_unanswered_inbound_is_a_reason_until_someone_writes_back():
    assert reasons(last_inbound_at=NOW - timedelta(hours=1)) == [Reason.INBOUND_UNANSWERED]
    assert reasons(last_inbound_at=NOW - timedelta(hours=1), last_outbound_at=NOW) == []


def test_an_ownerless_lead_is_unassigned():
    assert reasons(assigned_to_user_id=None) == [Reason.UNASSIGNED]


@pytest.mark.parametrize("status", ["converted", "customer", "lost", "frozen"])
def test_closed_and_won_leads_are_never_in_the_queue(status):
    assert reasons(status=status, assigned_to_user_id=None, next_action_at=NOW - timedelta(days=1)) == []


def test_archived_and_paused_leads_are_never_in_the_queue():
    assert reasons(assigned_to_user_id=None, archived_at=NOW) == []
    assert reasons(assigned_to_user_id=None, paused_at=NOW) == []


def test_the_sla_comes_from_the_environment_with_15_minutes_by_default():
    assert new_lead_sla({}) == timedelta(minutes=15)
    assert new_lead_sla({"NEW_LEAD_SLA_MINUTES": "30"}) == timedelta(minutes=30)
    assert new_lead_sla({"NEW_LEAD_SLA_MINUTES": "nonsense"}) == timedelta(minutes=15)
    assert new_lead_sla({"NEW_LEAD_SLA_MINUTES": "0"}) == timedelta(minutes=15)


# -- the organization's day --------------------------------------------------------------------------------------


def test_the_day_is_the_organizations_not_utcs():
    late_evening_utc = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)
    assert org_day(late_evening_utc, "UTC").date == date(2026, 3, 10)
    assert org_day(late_evening_utc, "Asia/Jerusalem").date == date(2026, 3, 11)
    assert org_day(late_evening_utc, "America/New_York").date == date(2026, 3, 10)


def test_a_day_starts_at_local_midnight():
    day = org_day(datetime(2026, 1, 15, 12, tzinfo=UTC), "Asia/Jerusalem")
    assert day.starts_at == datetime(2026, 1, 14, 22, tzinfo=UTC)
    assert day.ends_at == datetime(2026, 1, 15, 22, tzinfo=UTC)


def test_the_spring_forward_day_is_23_hours_long():
    day = org_day(datetime(2026, 3, 8, 12, tzinfo=UTC), "America/New_York")
    assert day.date == date(2026, 3, 8)
    assert day.ends_at - day.starts_at == timedelta(hours=23)


def test_the_fall_back_day_is_25_hours_long():
    day = org_day(datetime(2026, 11, 1, 12, tzinfo=UTC), "America/New_York")
    assert day.ends_at - day.starts_at == timedelta(hours=25)


def test_an_unknown_timezone_falls_back_to_utc():
    assert org_day(NOW, "Mars/Olympus").starts_at == datetime(2026, 3, 10, tzinfo=UTC)


# -- the prompt ------------------------------------------------------------------------------------------------------


ONE_OVERDUE_TASK = UrgentCounts(overdue_tasks=1)
NO_STATE = PromptState()


def decide(role="owner", counts=ONE_OVERDUE_TASK, state=NO_STATE, today=DAY.date):
    return decide_prompt(role, counts, state, now=NOW, today=today)


def test_staff_with_items_see_the_prompt():
    for role in ("owner", "admin", "coach"):
        assert decide(role).show


def test_members_never_see_the_prompt():
    assert not decide("member", UrgentCounts(overdue_tasks=9)).show


def test_nothing_to_show_is_no_prompt():
    assert not decide(counts=UrgentCounts()).show


def test_the_prompt_shows_once_per_organization_day():
    assert not decide(state=PromptState(last_shown_on=DAY.date)).show
    assert decide(state=PromptState(last_shown_on=DAY.date - timedelta(days=1))).show


def test_a_snoozed_prompt_stays_hidden_until_the_snooze_lapses():
    assert not decide(state=PromptState(snoozed_until=NOW + timedelta(minutes=1))).show
    assert decide(state=PromptState(snoozed_until=NOW)).show


def test_five_items_are_dismissible_six_block():
    assert not decide(counts=UrgentCounts(overdue_tasks=2, due_today_tasks=2, leads_needing_attention=1)).blocking
    assert decide(counts=UrgentCounts(overdue_tasks=2, due_today_tasks=2, leads_needing_attention=2)).blocking


def test_review_goes_to_leads_only_when_leads_outnumber_tasks():
    assert review_target(UrgentCounts(overdue_tasks=1, leads_needing_attention=2)) is ReviewTarget.LEADS
    assert (
        review_target(UrgentCounts(overdue_tasks=1, due_today_tasks=1, leads_needing_attention=2)) is ReviewTarget.TASKS
    )
    assert review_target(UrgentCounts()) is ReviewTarget.TASKS


def test_the_lead_count_shown_stops_at_100():
    assert UrgentCounts(leads_needing_attention=99).leads_shown == 99
    assert not UrgentCounts(leads_needing_attention=99).leads_capped
    assert UrgentCounts(leads_needing_attention=150).leads_shown == 100
    assert UrgentCounts(leads_needing_attention=100).leads_capped


def test_snooze_one_hour_is_an_hour_from_now():
    assert snoozed_until(SnoozeUntil.ONE_HOUR, now=NOW, timezone="Asia/Jerusalem") == NOW + timedelta(hours=1)


def test_snooze_tomorrow_is_8_am_tomorrow_on_the_organizations_clock():
    # 23:30 UTC on March 10 is already March 11 in Jerusalem (UTC+2): tomorrow there is March 12.
    now = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)
    assert snoozed_until(SnoozeUntil.TOMORROW, now=now, timezone="Asia/Jerusalem") == datetime(
        2026, 3, 12, 6, 0, tzinfo=UTC
    )
    assert snoozed_until(SnoozeUntil.TOMORROW, now=now, timezone="UTC") == datetime(2026, 3, 11, 8, 0, tzinfo=UTC)


def test_snooze_tomorrow_across_a_dst_change_is_still_8_am_local():
    # New York springs forward on 2026-03-08: 08:00 EDT is 12:00 UTC, the day before it was 13:00 UTC.
    now = datetime(2026, 3, 7, 18, 0, tzinfo=UTC)
    assert snoozed_until(SnoozeUntil.TOMORROW, now=now, timezone="America/New_York") == datetime(
        2026, 3, 8, 12, 0, tzinfo=UTC
    )


def test_a_due_follow_up_with_an_open_task_is_not_a_lead_item():
    lead = LeadFacts(
        status="contacted",
        created_at=NOW - timedelta(days=9),
        assigned_to_user_id=OWNER,
        next_action_at=NOW - timedelta(days=1),
        next_action_type="email",
    )
    assert is_urgent_for_prompt(lead, now=NOW, day=DAY, sla=SLA, has_open_task=False)
    assert not is_urgent_for_prompt(lead, now=NOW, day=DAY, sla=SLA, has_open_task=True)


def test_a_returned_or_unassigned_lead_alone_is_not_urgent_for_the_prompt():
    lead = LeadFacts(status="contacted", created_at=NOW - timedelta(days=9), returned_at=NOW - timedelta(hours=1))
    assert not is_urgent_for_prompt(lead, now=NOW, day=DAY, sla=SLA, has_open_task=False)
