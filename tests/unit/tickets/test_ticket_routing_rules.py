"""Routing rules (tickets.rules.routing): the first matching rule by position wins; no match is triage."""

from __future__ import annotations

import uuid

from leadcrm.tickets.rules.routing import (
    Channel,
    Priority,
    RequesterType,
    RoutingRule,
    TicketFacts,
    first_match,
    normalize_keywords,
    rule_matches,
)

QUEUE = uuid.uuid4()


def facts(**overrides) -> TicketFacts:
    values = {
        "channel": Channel.EMAIL,
        "priority": Priority.NORMAL,
        "requester_type": RequesterType.MEMBER,
        "subject": "Cannot book a class",
        "description": "The app says my membership expired.",
    }
    return TicketFacts(**{**values, **overrides})


def rule(position: int = 0, **conditions) -> RoutingRule:
    return RoutingRule(id=uuid.uuid4(), position=position, queue_id=QUEUE, **conditions)


def test_a_rule_without_conditions_matches_everything():
    assert rule_matches(rule(), facts())


def test_each_condition_must_hold():
    assert rule_matches(rule(channels=frozenset({"email", "chat"})), facts())
    assert not rule_matches(rule(channels=frozenset({"phone"})), facts())
    assert not rule_matches(rule(priorities=frozenset({"urgent"})), facts())
    assert not rule_matches(rule(requester_types=frozenset({"lead"})), facts())
    assert rule_matches(rule(requester_types=frozenset({"member"}), priorities=frozenset({"normal"})), facts())


def test_a_keyword_matches_the_subject_or_the_description_in_any_case():
    assert rule_matches(rule(keywords=("book",)), facts())
    assert rule_matches(rule(keywords=("membership expired",)), facts())
    assert rule_matches(rule(keywords=("EXPIRED",)), facts())


def test_a_keyword_matches_whole_words_only():
    assert not rule_matches(rule(keywords=("class",)), facts(subject="Classes", description=""))
    assert not rule_matches(rule(keywords=("bill",)), facts(subject="billiards table", description=""))


def test_any_one_keyword_is_enough():
    assert rule_matches(rule(keywords=("refund", "expired")), facts())


def test_the_first_rule_by_position_wins_whatever_order_they_are_read_in():
    second, first = rule(position=1), rule(position=0)
    assert first_match([second, first], facts()) is first


def test_a_rule_that_does_not_match_is_passed_over():
    billing = rule(position=0, keywords=("invoice",))
    fallback = rule(position=1)
    assert first_match([billing, fallback], facts()) is fallback


def test_no_match_leaves_the_ticket_for_triage():
    assert first_match([rule(channels=frozenset({"phone"}))], facts()) is None
    assert first_match([], facts()) is None


def test_an_inactive_rule_never_matches():
    assert first_match([rule(active=False)], facts()) is None


def test_keywords_are_trimmed_lowered_and_deduplicated():
    assert normalize_keywords([" Refund ", "refund", "", "Late  Fee"]) == ("refund", "late fee")
