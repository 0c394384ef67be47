"""Assignment rules (leads.rules.assignment): matching, the three strategies, availability windows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leadcrm.leads.rules.assignment import (
    MINUTES_PER_DAY,
    AssignmentRule,
    Availability,
    LeadTraits,
    StaffState,
    Strategy,
    TimeWindow,
    WorkingHours,
    assign,
    assign_many,
    choose,
    language_of,
    local_moment,
    parse_clock,
)

ADA, BEN, CY = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
READY = StaffState(active=True, available=True, open_leads=0)
minutes = st.integers(min_value=0, max_value=MINUTES_PER_DAY - 1)


def rule(strategy: Strategy = Strategy.ROUND_ROBIN, people=(ADA, BEN), **conditions) -> AssignmentRule:
    return AssignmentRule(uuid.uuid4(), "Rule", strategy, tuple(people), **conditions)


def staff(**states: StaffState) -> dict[uuid.UUID, StaffState]:
    names = {"ada": ADA, "ben": BEN, "cy": CY}
    return {names[name]: state for name, state in states.items()}


# -- matching --------------------------------------------------------------------------------------------------


def test_a_rule_without_conditions_matches_every_lead():
    assert rule().matches(LeadTraits())


def test_every_condition_a_rule_sets_must_hold():
    campaign = uuid.uuid4()
    whatsapp_hebrew = rule(sources=frozenset({"whatsapp"}), languages=frozenset({"he"}), campaign_ids={campaign})
    assert whatsapp_hebrew.matches(LeadTraits(source="whatsapp", language="he", campaign_id=campaign))
    assert not whatsapp_hebrew.matches(LeadTraits(source="whatsapp", language="en", campaign_id=campaign))
    assert not whatsapp_hebrew.matches(LeadTraits(source="meta", language="he", campaign_id=campaign))
    assert not whatsapp_hebrew.matches(LeadTraits(source="whatsapp", language="he"))


def test_a_rule_on_a_form_matches_only_leads_of_that_form():
    form = rule(form_refs=frozenset({"form-1"}))
    assert form.matches(LeadTraits(form_ref="form-1"))
    assert not form.matches(LeadTraits(form_ref="form-2"))


def test_the_language_is_the_first_subtag_of_the_locale():
    assert language_of("he-IL") == "he"
    assert language_of("EN_gb") == "en"
    assert language_of("") is None
    assert language_of(None) is None


@given(start=minutes, end=minutes, minute=minutes)
def test_a_time_window_holds_a_minute_exactly_when_it_lies_between_its_ends(start: int, end: int, minute: int):
    window = TimeWindow(start, end)
    if start == end:
        expected = True
    elif start < end:
        expected = start <= minute < end
    else:  # wraps midnight: the complement of [end, start)
        expected = not (end <= minute < start)
    assert window.contains(minute) is expected


def test_a_night_window_matches_after_midnight():
    night = rule(window=TimeWindow(parse_clock("22:00"), parse_clock("06:00")))
    assert night.matches(LeadTraits(minute_of_day=parse_clock("01:30")))
    assert not night.matches(LeadTraits(minute_of_day=parse_clock("12:00")))


@pytest.mark.parametrize("text", ["24:00", "9:00", "09:60", "ab:cd", ""])
def test_a_clock_time_is_hh_mm(text: str):
    with pytest.raises(ValueError):
        parse_clock(text)


def test_the_time_of_day_is_read_in_the_organization_timezone():
    at = datetime(2026, 7, 6, 21, 30, tzinfo=UTC)  # a Monday
    assert local_moment(at, "Asia/Jerusalem") == (2, 30)  # Tuesday 00:30 there
    assert local_moment(at, None) == (1, 21 * 60 + 30)


# -- availability ----------------------------------------------------------------------------------------------

NOW = datetime(2026, 7, 6, 9, 0, tzinfo=UTC)  # Monday 09:00 UTC


@given(hours=st.integers(min_value=-1000, max_value=1000))
def test_a_person_away_is_unavailable_until_their_away_ends(hours: int):
    away_until = NOW + timedelta(hours=hours)
    assert Availability(away_until=away_until).is_available(NOW, "UTC") is (away_until <= NOW)


def test_nobody_set_working_hours_means_any_time():
    assert Availability().is_available(NOW, "UTC")


@given(day=st.integers(min_value=1, max_value=7), start=minutes, end=minutes, at=minutes)
def test_working_hours_cover_the_minutes_of_their_window(day: int, start: int, end: int, at: int):
    monday = datetime(2026, 7, 6, tzinfo=UTC)
    moment = monday + timedelta(days=day - 1, minutes=at)
    hours = Availability(working_hours=(WorkingHours(day, TimeWindow(start, end)),))
    # a window that wraps midnight covers, on its own day, the minutes from its start on
    expected = at >= start if start > end else TimeWindow(start, end).contains(at)
    assert hours.is_available(moment, "UTC") is expected


@given(day=st.integers(min_value=1, max_value=7), start=minutes, end=minutes, at=minutes)
def test_a_window_past_midnight_belongs_to_the_day_it_starts_on(day: int, start: int, end: int, at: int):
    monday = datetime(2026, 7, 6, tzinfo=UTC)
    next_day = monday + timedelta(days=day, minutes=at)  # the day after `day` (Sunday's is Monday)
    hours = Availability(working_hours=(WorkingHours(day, TimeWindow(start, end)),))
    expected = start > end and at < end
    assert hours.is_available(next_day, "UTC") is expected


def test_working_hours_are_in_the_organization_timezone():
    nine_to_five = Availability(working_hours=(WorkingHours(1, TimeWindow(9 * 60, 17 * 60)),))
    assert nine_to_five.is_available(NOW, "UTC")
    assert not nine_to_five.is_available(NOW, "America/New_York")  # 05:00 there


# -- strategies ------------------------------------------------------------------------------------------------


def test_round_robin_takes_turns_from_its_cursor():
    results, cursors = assign_many([rr := rule()], [LeadTraits()] * 4, staff(ada=READY, ben=READY))
    assert [a.choice.user_id for a in results] == [ADA, BEN, ADA, BEN]
    assert cursors == {rr.id: 0}


def test_round_robin_skips_a_person_who_is_away():
    away = StaffState(active=True, available=False, open_leads=0)
    results, _ = assign_many([rule()], [LeadTraits()] * 3, staff(ada=away, ben=READY))
    assert [a.choice.user_id for a in results] == [BEN, BEN, BEN]


def test_round_robin_skips_a_person_at_the_rules_capacity():
    full = StaffState(active=True, available=True, open_leads=3)
    choice = choose(rule(capacity=3), staff(ada=full, ben=READY))
    assert choice is not None and choice.user_id == BEN


def test_least_loaded_takes_the_person_with_fewest_open_leads():
    busy, idle = StaffState(True, True, 7), StaffState(True, True, 2)
    results, _ = assign_many([rule(Strategy.LEAST_LOADED)], [LeadTraits()] * 6, staff(ada=busy, ben=idle))
    assert [a.choice.user_id for a in results].count(BEN) == 5  # 2..7, then they take turns


def test_a_fixed_rule_places_with_its_one_person():
    choice = choose(rule(Strategy.FIXED, people=(CY,)), staff(cy=READY))
    assert choice is not None and choice.user_id == CY


def test_first_matching_rule_wins():
    first, second = rule(Strategy.FIXED, people=(ADA,)), rule(Strategy.FIXED, people=(BEN,))
    assert assign([first, second], LeadTraits(), staff(ada=READY, ben=READY)).choice.rule == first


def test_a_rule_that_can_place_nobody_is_skipped_for_the_next():
    away = StaffState(active=True, available=False, open_leads=0)
    first, second = rule(Strategy.FIXED, people=(ADA,)), rule(Strategy.FIXED, people=(BEN,))
    assert assign([first, second], LeadTraits(), staff(ada=away, ben=READY)).choice.rule == second


def test_a_person_who_left_is_never_chosen_and_is_reported():
    left = StaffState(active=False, available=True, open_leads=0)
    fixed = rule(Strategy.FIXED, people=(ADA,))
    assignment = assign([fixed], LeadTraits(), staff(ada=left))
    assert assignment.choice is None
    assert assignment.departed == {fixed.id: (ADA,)}


def test_no_rule_can_place_the_lead_leaves_it_unassigned():
    assert assign([rule(sources=frozenset({"meta"}))], LeadTraits(source="minisite"), staff()).choice is None


@given(st.lists(st.booleans(), min_size=1, max_size=30), st.integers(min_value=0, max_value=5))
def test_round_robin_over_available_people_spreads_evenly(availability: list[bool], cursor: int):
    people = tuple(uuid.uuid4() for _ in availability)
    states = {p: StaffState(True, ok, 0) for p, ok in zip(people, availability, strict=True)}
    ready = [p for p, ok in zip(people, availability, strict=True) if ok]
    rounds = 3
    results, _ = assign_many([rule(people=people, cursor=cursor)], [LeadTraits()] * (rounds * len(ready)), states)
    chosen = [a.choice.user_id if a.choice else None for a in results]
    assert all(chosen.count(p) == rounds for p in ready)
