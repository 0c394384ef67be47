"""Deal pipeline invariants and forecast periods, as pure rules (deals.rules.pipelines, deals.rules.forecast)."""

from __future__ import annotations

import uuid
from datetime import date

import pytest

from leadcrm.deals.rules.deals import ForecastCategory, StageKind
from leadcrm.deals.rules.forecast import Period, period_start, shift, win_rate, window
from leadcrm.deals.rules.pipelines import (
    DEFAULT_DEAL_STAGES,
    StageSettings,
    StageSlot,
    insert_position,
    require_exact_reorder,
    require_valid_order,
    require_valid_settings,
)
from leadcrm.platform.errors import BadRequest

K = StageKind
DEFAULT_ORDER = [StageSlot(uuid.uuid4(), s.kind) for s in DEFAULT_DEAL_STAGES]


def _code(call) -> str:
    with pytest.raises(BadRequest) as error:
        call()
    return error.value.code


def test_the_default_pipeline_is_the_specs_six_stages_with_their_probabilities_and_categories():
    assert [(s.name, s.kind, s.probability, s.forecast_category) for s in DEFAULT_DEAL_STAGES] == [
        ("New", K.NEW, 10, ForecastCategory.PIPELINE),
        ("Discovery", K.DISCOVERY, 25, ForecastCategory.PIPELINE),
        ("Proposal", K.PROPOSAL, 50, ForecastCategory.BEST_CASE),
        ("Negotiation", K.NEGOTIATION, 75, ForecastCategory.BEST_CASE),
        ("Closed-Won", K.WON, 100, ForecastCategory.CLOSED),
        ("Closed-Lost", K.LOST, 0, ForecastCategory.CLOSED),
    ]
    for settings in DEFAULT_DEAL_STAGES:
        require_valid_settings(settings)
    require_valid_order(DEFAULT_ORDER)


@pytest.mark.parametrize(
    ("settings", "code"),
    [
        (StageSettings("Won", K.WON, 90, ForecastCategory.CLOSED), "DEAL_STAGE_PROBABILITY_FIXED"),
        (StageSettings("Lost", K.LOST, 5, ForecastCategory.CLOSED), "DEAL_STAGE_PROBABILITY_FIXED"),
        (StageSettings("Won", K.WON, 100, ForecastCategory.COMMIT), "DEAL_STAGE_CATEGORY_MISMATCH"),
        (StageSettings("Talks", K.NEGOTIATION, 75, ForecastCategory.CLOSED), "DEAL_STAGE_CATEGORY_MISMATCH"),
        (StageSettings("Talks", K.NEGOTIATION, 101, ForecastCategory.COMMIT), "DEAL_STAGE_PROBABILITY_RANGE"),
        (StageSettings("Talks", K.NEGOTIATION, -1, ForecastCategory.COMMIT), "DEAL_STAGE_PROBABILITY_RANGE"),
        (StageSettings("New", K.NEW, 10, ForecastCategory.PIPELINE, 7), "DEAL_STAGE_CANNOT_ROT"),
        (StageSettings("Won", K.WON, 100, ForecastCategory.CLOSED, 7), "DEAL_STAGE_CANNOT_ROT"),
        (StageSettings("Quote", K.PROPOSAL, 50, ForecastCategory.BEST_CASE, 0), "DEAL_STAGE_ROTTING_RANGE"),
        (StageSettings("Quote", K.PROPOSAL, 50, ForecastCategory.BEST_CASE, 366), "DEAL_STAGE_ROTTING_RANGE"),
    ],
)
def test_a_stage_keeps_the_settings_its_kind_allows(settings, code):
    assert _code(lambda: require_valid_settings(settings)) == code


def test_late_negotiation_may_be_a_commit_stage_that_rots_sooner():
    require_valid_settings(StageSettings("Late negotiation", K.NEGOTIATION, 90, ForecastCategory.COMMIT, 7))


def test_stages_stay_in_phase_order():
    swapped = [DEFAULT_ORDER[0], DEFAULT_ORDER[2], DEFAULT_ORDER[1], *DEFAULT_ORDER[3:]]
    assert _code(lambda: require_valid_order(swapped)) == "DEAL_STAGE_ORDER"
    lost_first_of_the_closed = [*DEFAULT_ORDER[:4], DEFAULT_ORDER[5], DEFAULT_ORDER[4]]
    require_valid_order(lost_first_of_the_closed)  # won and lost share the last phase


def test_every_open_kind_and_exactly_one_won_and_one_lost_stage_are_kept():
    without_discovery = [s for s in DEFAULT_ORDER if s.kind is not K.DISCOVERY]
    assert _code(lambda: require_valid_order(without_discovery)) == "DEAL_PIPELINE_COVERAGE"
    two_won = [*DEFAULT_ORDER[:5], StageSlot(uuid.uuid4(), K.WON), DEFAULT_ORDER[5]]
    assert _code(lambda: require_valid_order(two_won)) == "DEAL_PIPELINE_COVERAGE"


def test_a_new_stage_goes_after_the_last_of_its_kind_unless_placed():
    assert insert_position(DEFAULT_ORDER, K.NEGOTIATION, None) == 4
    assert insert_position(DEFAULT_ORDER, K.NEW, None) == 1
    assert insert_position(DEFAULT_ORDER, K.NEGOTIATION, 3) == 3
    assert _code(lambda: insert_position(DEFAULT_ORDER, K.NEW, 7)) == "STAGE_POSITION_OUT_OF_RANGE"


def test_a_reorder_names_every_stage_once():
    ids = [s.id for s in DEFAULT_ORDER]
    require_exact_reorder(ids, list(reversed(ids)))
    assert _code(lambda: require_exact_reorder(ids, ids[:-1])) == "STAGE_ORDER_MISMATCH"
    assert _code(lambda: require_exact_reorder(ids, [*ids[:-1], ids[0]])) == "STAGE_ORDER_MISMATCH"


# -- forecast periods --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("day", "period", "start"),
    [
        (date(2026, 11, 29), Period.MONTH, date(2026, 11, 1)),
        (date(2026, 11, 29), Period.QUARTER, date(2026, 10, 1)),
        (date(2026, 3, 31), Period.QUARTER, date(2026, 1, 1)),
        (date(2026, 4, 1), Period.QUARTER, date(2026, 4, 1)),
    ],
)
def test_a_day_belongs_to_its_month_and_quarter(day, period, start):
    assert period_start(day, period) == start


def test_periods_shift_across_years():
    assert shift(date(2026, 11, 1), Period.MONTH, 3) == date(2027, 2, 1)
    assert shift(date(2026, 1, 1), Period.QUARTER, -1) == date(2025, 10, 1)


def test_the_window_is_whole_periods_and_defaults_around_today():
    assert window(date(2026, 11, 29), Period.MONTH, None, None) == (date(2026, 9, 1), date(2027, 3, 1))
    assert window(date(2026, 11, 29), Period.QUARTER, date(2026, 2, 10), date(2026, 8, 1)) == (
        date(2026, 1, 1),
        date(2026, 10, 1),
    )
    with pytest.raises(BadRequest) as reversed_range:
        window(date(2026, 11, 29), Period.MONTH, date(2026, 5, 1), date(2026, 4, 30))
    assert reversed_range.value.code == "INVALID_PERIOD"
    with pytest.raises(BadRequest) as too_long:
        window(date(2026, 11, 29), Period.MONTH, date(2020, 1, 1), date(2026, 1, 1))
    assert too_long.value.code == "INVALID_PERIOD"


def test_the_win_rate_is_won_over_closed_by_count():
    assert win_rate(2, 1) == 0.6667
    assert win_rate(0, 3) == 0.0
    assert win_rate(0, 0) is None
