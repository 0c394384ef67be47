"""leadcrm.pipelines.rules.statuses: nine categories, partitioned into open, won and closed."""

from __future__ import annotations

from leadcrm.pipelines.rules.statuses import (
    CLOSED_CATEGORIES,
    DEFAULT_STAGES,
    OPEN_CATEGORIES,
    WON_CATEGORIES,
    StageCategory,
    is_closed,
    is_open,
    is_won,
)


def test_there_are_exactly_the_nine_categories_of_the_design():
    assert {c.value for c in StageCategory} == {
        "new",
        "contacted",
        "callback",
        "trial_booked",
        "no_show",
        "converted",
        "customer",
        "lost",
        "frozen",
    }


def test_open_won_and_closed_are_pairwise_disjoint():
    assert not OPEN_CATEGORIES & WON_CATEGORIES
    assert not OPEN_CATEGORIES & CLOSED_CATEGORIES
    assert not WON_CATEGORIES & CLOSED_CATEGORIES


def test_open_won_and_closed_together_cover_every_category():
    assert set(StageCategory) == OPEN_CATEGORIES | WON_CATEGORIES | CLOSED_CATEGORIES


def test_open_categories_are_the_five_working_states():
    assert {c.value for c in OPEN_CATEGORIES} == {"new", "contacted", "callback", "trial_booked", "no_show"}


def test_won_categories_are_converted_and_customer():
    assert {c.value for c in WON_CATEGORIES} == {"converted", "customer"}


def test_closed_categories_are_lost_and_frozen():
    assert {c.value for c in CLOSED_CATEGORIES} == {"lost", "frozen"}


def test_each_category_answers_exactly_one_of_open_won_closed():
    for category in StageCategory:
        assert [is_open(category), is_won(category), is_closed(category)].count(True) == 1, category


def test_the_default_pipeline_has_exactly_one_stage_per_category():
    categories = [category for category, _ in DEFAULT_STAGES]
    assert sorted(categories) == sorted(StageCategory)
    assert len(categories) == len(set(categories))


def test_the_default_pipeline_starts_with_new():
    assert DEFAULT_STAGES[0][0] is StageCategory.NEW


def test_every_default_stage_has_a_name():
    assert all(name.strip() for _, name in DEFAULT_STAGES)
