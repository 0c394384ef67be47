"""Pipeline rules: either-flavor win coverage, stage insertion, exact reorders, renumbering."""

from __future__ import annotations

import itertools
import uuid

import pytest

from leadcrm.pipelines.rules.editing import (
    CoverageNeed,
    StageSlot,
    active_categories_after_archive,
    active_categories_after_recategorize,
    missing_coverage,
    order_with_inserted,
    renumbered,
    require_exact_reorder,
    require_win_coverage,
)
from leadcrm.pipelines.rules.statuses import DEFAULT_STAGES, StageCategory
from leadcrm.platform.errors import BadRequest

C = StageCategory
ALL = tuple(StageCategory)


def _covered_by_definition(categories: set[StageCategory]) -> bool:
    return C.NEW in categories and C.LOST in categories and bool(categories & {C.CONVERTED, C.CUSTOMER})


# -- win coverage ----------------------------------------------------------------------------------------


def test_the_default_pipeline_is_covered():
    assert missing_coverage(c for c, _ in DEFAULT_STAGES) == ()


@pytest.mark.parametrize("win", [C.CONVERTED, C.CUSTOMER])
def test_either_win_flavour_alone_covers_the_win_need(win):
    assert missing_coverage([C.NEW, win, C.LOST]) == ()


def test_a_course_funnel_without_converted_but_with_customer_is_covered():
    assert missing_coverage([C.NEW, C.CONTACTED, C.TRIAL_BOOKED, C.CUSTOMER, C.LOST]) == ()


def test_both_win_flavours_together_are_covered():
    assert missing_coverage([C.NEW, C.CONVERTED, C.CUSTOMER, C.LOST]) == ()


def test_no_stage_at_all_misses_new_win_and_lost_in_that_order():
    assert missing_coverage([]) == (CoverageNeed.NEW, CoverageNeed.WIN, CoverageNeed.LOST)


@pytest.mark.parametrize(
    ("categories", "missing"),
    [
        ([C.CONVERTED, C.LOST], ("new",)),
        ([C.NEW, C.LOST], ("win",)),
        ([C.NEW, C.CUSTOMER], ("lost",)),
        ([C.NEW, C.CONTACTED, C.CALLBACK, C.TRIAL_BOOKED, C.NO_SHOW, C.FROZEN], ("win", "lost")),
        ([C.FROZEN, C.CONTACTED], ("new", "win", "lost")),
    ],
)
def test_missing_coverage_names_what_is_missing(categories, missing):
    assert tuple(need.value for need in missing_coverage(categories)) == missing


def test_frozen_is_not_lost_and_no_open_category_is_a_win():
    assert missing_coverage([C.NEW, C.FROZEN, C.NO_SHOW, C.TRIAL_BOOKED]) == (CoverageNeed.WIN, CoverageNeed.LOST)


def test_duplicate_categories_count_once_and_do_not_hide_a_missing_need():
    assert missing_coverage([C.NEW, C.NEW, C.NEW, C.CUSTOMER, C.CUSTOMER]) == (CoverageNeed.LOST,)


def test_categories_may_arrive_as_their_string_values():
    assert missing_coverage(["new", "customer", "lost"]) == ()


@pytest.mark.parametrize("size", range(0, 4))
def test_coverage_matches_its_definition_for_every_combination_of_categories(size):
    for combination in itertools.combinations_with_replacement(ALL, size):
        categories = set(combination)
        assert (missing_coverage(combination) == ()) == _covered_by_definition(categories), combination


def test_coverage_matches_its_definition_for_every_subset_of_categories():
    for mask in range(1 << len(ALL)):
        subset = {c for i, c in enumerate(ALL) if mask >> i & 1}
        missing = set(missing_coverage(subset))
        assert (CoverageNeed.NEW in missing) == (C.NEW not in subset)
        assert (CoverageNeed.LOST in missing) == (C.LOST not in subset)
        assert (CoverageNeed.WIN in missing) == (not subset & {C.CONVERTED, C.CUSTOMER})


def test_require_win_coverage_passes_a_covered_pipeline():
    require_win_coverage([C.NEW, C.CUSTOMER, C.LOST])


def test_require_win_coverage_is_a_400_with_its_own_code_and_the_missing_needs():
    with pytest.raises(BadRequest) as raised:
        require_win_coverage([C.NEW, C.CONTACTED])
    assert raised.value.status == 400
    assert raised.value.code == "PIPELINE_WIN_COVERAGE"
    assert raised.value.body()["error"]["missing"] == ["win", "lost"]


# -- coverage after an edit ------------------------------------------------------------------------------


def _slot(category: StageCategory, *, archived: bool = False) -> StageSlot:
    return StageSlot(id=uuid.uuid4(), category=category, archived=archived)


def test_archiving_the_only_new_stage_leaves_new_missing():
    new, won, lost = _slot(C.NEW), _slot(C.CONVERTED), _slot(C.LOST)
    assert missing_coverage(active_categories_after_archive([new, won, lost], new.id)) == (CoverageNeed.NEW,)


def test_archiving_one_of_two_new_stages_keeps_coverage():
    first, second = _slot(C.NEW), _slot(C.NEW)
    stages = [first, second, _slot(C.CONVERTED), _slot(C.LOST)]
    assert missing_coverage(active_categories_after_archive(stages, first.id)) == ()


def test_archiving_converted_keeps_coverage_when_customer_remains():
    converted = _slot(C.CONVERTED)
    stages = [_slot(C.NEW), converted, _slot(C.CUSTOMER), _slot(C.LOST)]
    assert missing_coverage(active_categories_after_archive(stages, converted.id)) == ()


def test_archiving_the_last_win_stage_leaves_win_missing():
    customer = _slot(C.CUSTOMER)
    stages = [_slot(C.NEW), customer, _slot(C.CONVERTED, archived=True), _slot(C.LOST)]
    assert missing_coverage(active_categories_after_archive(stages, customer.id)) == (CoverageNeed.WIN,)


def test_an_archived_stage_covers_nothing():
    stages = [_slot(C.NEW), _slot(C.CONVERTED), _slot(C.LOST, archived=True)]
    contacted = _slot(C.CONTACTED)
    assert missing_coverage(active_categories_after_archive([*stages, contacted], contacted.id)) == (CoverageNeed.LOST,)


@pytest.mark.parametrize(("before", "after"), [(C.CONVERTED, C.CUSTOMER), (C.CUSTOMER, C.CONVERTED)])
def test_the_last_win_stage_may_flip_between_the_two_flavours(before, after):
    win = _slot(before)
    stages = [_slot(C.NEW), win, _slot(C.LOST)]
    assert missing_coverage(active_categories_after_recategorize(stages, win.id, after)) == ()


@pytest.mark.parametrize("to", [c for c in ALL if c not in (C.CONVERTED, C.CUSTOMER)])
def test_turning_the_last_win_stage_into_anything_else_leaves_win_missing(to):
    win = _slot(C.CUSTOMER)
    stages = [_slot(C.NEW), win, _slot(C.LOST)]
    missing = missing_coverage(active_categories_after_recategorize(stages, win.id, to))
    assert CoverageNeed.WIN in missing


def test_turning_the_only_lost_stage_into_frozen_leaves_lost_missing():
    lost = _slot(C.LOST)
    stages = [_slot(C.NEW), _slot(C.CUSTOMER), lost]
    assert missing_coverage(active_categories_after_recategorize(stages, lost.id, C.FROZEN)) == (CoverageNeed.LOST,)


def test_turning_the_only_new_stage_into_lost_leaves_new_missing_even_though_lost_doubles():
    new = _slot(C.NEW)
    stages = [new, _slot(C.CONVERTED), _slot(C.LOST)]
    assert missing_coverage(active_categories_after_recategorize(stages, new.id, C.LOST)) == (CoverageNeed.NEW,)


def test_recategorizing_an_archived_stage_does_not_make_it_count():
    archived = _slot(C.CONTACTED, archived=True)
    stages = [_slot(C.NEW), _slot(C.CONVERTED), archived]
    assert missing_coverage(active_categories_after_recategorize(stages, archived.id, C.LOST)) == (CoverageNeed.LOST,)


def test_a_recategorization_can_repair_a_pipeline_that_lacked_a_need():
    contacted = _slot(C.CONTACTED)
    stages = [_slot(C.NEW), contacted, _slot(C.LOST)]
    assert missing_coverage(active_categories_after_recategorize(stages, contacted.id, C.CUSTOMER)) == ()


# -- inserting a stage -----------------------------------------------------------------------------------

A, B, D = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
NEW_ID = uuid.uuid4()


def test_a_stage_without_a_position_goes_last():
    assert order_with_inserted([A, B], NEW_ID, None) == [A, B, NEW_ID]


@pytest.mark.parametrize(("position", "expected"), [(0, [NEW_ID, A, B]), (1, [A, NEW_ID, B]), (2, [A, B, NEW_ID])])
def test_a_stage_at_a_position_shifts_the_later_stages(position, expected):
    assert order_with_inserted([A, B], NEW_ID, position) == expected


def test_the_first_stage_of_an_empty_pipeline_goes_at_zero():
    assert order_with_inserted([], NEW_ID, 0) == [NEW_ID]


@pytest.mark.parametrize("position", [3, 100, -1])
def test_a_position_outside_the_active_stages_is_refused_not_clamped(position):
    with pytest.raises(BadRequest) as raised:
        order_with_inserted([A, B], NEW_ID, position)
    assert raised.value.code == "STAGE_POSITION_OUT_OF_RANGE"
    assert raised.value.body()["error"]["maxPosition"] == 2


# -- reordering ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", list(itertools.permutations([A, B, D])))
def test_any_permutation_of_the_active_stages_is_a_valid_reorder(order):
    require_exact_reorder([A, B, D], list(order))


def _mismatch(active, requested) -> dict:
    with pytest.raises(BadRequest) as raised:
        require_exact_reorder(active, requested)
    assert raised.value.code == "STAGE_ORDER_MISMATCH"
    return raised.value.body()["error"]


def test_a_reorder_missing_an_active_stage_is_refused_and_names_it():
    error = _mismatch([A, B, D], [A, B])
    assert error["missingStageIds"] == [str(D)]
    assert error["unknownStageIds"] == [] and error["duplicateStageIds"] == []


def test_a_reorder_naming_a_stage_not_active_in_the_pipeline_is_refused_and_names_it():
    stranger = uuid.uuid4()
    error = _mismatch([A, B], [A, B, stranger])
    assert error["unknownStageIds"] == [str(stranger)]


def test_a_reorder_naming_a_stage_twice_is_refused_even_when_all_are_named():
    error = _mismatch([A, B], [A, B, A])
    assert error["duplicateStageIds"] == [str(A)]
    assert error["missingStageIds"] == []


def test_a_swap_of_one_stage_for_another_reports_both_sides():
    stranger = uuid.uuid4()
    error = _mismatch([A, B], [A, stranger])
    assert error["missingStageIds"] == [str(B)]
    assert error["unknownStageIds"] == [str(stranger)]


# -- renumbering -----------------------------------------------------------------------------------------


def test_renumbering_gives_active_stages_their_column_index_and_puts_archived_ones_after():
    archived = uuid.uuid4()
    assert renumbered([B, A], [archived]) == {B: 0, A: 1, archived: 2}


def test_renumbering_with_no_stage_is_empty():
    assert renumbered([], []) == {}
