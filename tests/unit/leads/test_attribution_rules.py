"""Attribution rules (leadcrm.leads.rules.touches): UTM capture, touch kinds, Direct / Unknown, first-touch,
last-touch and linear credit, prorated spend and CAC."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

import pytest

from leadcrm.analytics.rules.attribution import (
    Journey,
    TouchPoint,
    credit_by_campaign,
    customer_acquisition_cost,
    prorated_spend,
)
from leadcrm.leads.rules.touches import (
    DIRECT_UNKNOWN,
    TouchKind,
    Utm,
    acquisition_channel,
    touch_kind,
    utm_from_received,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
A, B, C = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


# -- UTM and kinds -------------------------------------------------------------------------------------------


def test_utm_is_read_from_a_utm_object():
    received = {"name": "Dana", "utm": {"source": "Google", "medium": "cpc", "campaign": "spring"}}
    assert utm_from_received(received) == Utm(source="Google", medium="cpc", campaign="spring")


def test_utm_is_read_from_flat_fields_in_either_spelling():
    assert utm_from_received({"utmSource": "fb", "utm_medium": "paid"}) == Utm(source="fb", medium="paid")


def test_blank_or_non_text_utm_values_are_not_captured():
    assert utm_from_received({"utm": {"source": "  ", "medium": 5}}).empty


def test_long_utm_values_are_cut_to_200_characters():
    assert utm_from_received({"utm": {"campaign": "x" * 500}}).campaign == "x" * 200


def test_nothing_received_means_no_utm():
    assert utm_from_received(None).empty and utm_from_received({}).empty


@pytest.mark.parametrize(
    ("channel", "kind"),
    [
        ("minisite", TouchKind.FORM),
        ("staff", TouchKind.STAFF),
        ("meta", TouchKind.AD),
        ("whatsapp", TouchKind.WHATSAPP_REFERRAL),
        ("import", TouchKind.IMPORT),
        ("join_released", TouchKind.OTHER),
    ],
)
def test_the_entry_channel_names_the_kind_of_touch(channel, kind):
    assert touch_kind(channel, Utm()) is kind


def test_an_unknown_entry_channel_with_utm_is_a_utm_touch():
    assert touch_kind("landing_page", Utm(source="google")) is TouchKind.UTM


# -- Direct / Unknown ----------------------------------------------------------------------------------------


def test_a_utm_source_is_the_acquisition_channel_in_lower_case():
    assert acquisition_channel("minisite", None, Utm(source="Google")) == "google"


@pytest.mark.parametrize("source", ["facebook", "instagram", "whatsapp", "email", "referral", "walk_in"])
def test_a_source_that_says_where_the_person_came_from_is_the_channel(source):
    assert acquisition_channel(source, None, Utm()) == source


@pytest.mark.parametrize("source", ["manual", "import", "other", "minisite"])
def test_a_lead_with_no_known_source_is_direct_unknown(source):
    assert acquisition_channel(source, None, Utm()) == DIRECT_UNKNOWN


def test_a_campaign_makes_the_source_known():
    assert acquisition_channel("minisite", A, Utm()) == "minisite"


# -- credit --------------------------------------------------------------------------------------------------


def test_first_touch_credit_goes_to_the_first_touchs_campaign():
    credits = credit_by_campaign([Journey(TouchPoint(at(0), A), at(10), [TouchPoint(at(1), B)])])
    assert credits[A].first_touch == 1 and credits[B].first_touch == 0


def test_last_touch_credit_goes_to_the_last_touch_before_the_win():
    journey = Journey(TouchPoint(at(0), A), at(10), [TouchPoint(at(5), B), TouchPoint(at(2), C)])
    credits = credit_by_campaign([journey])
    assert credits[B].last_touch == 1
    assert credits[A].last_touch == credits[C].last_touch == 0


def test_a_touch_after_the_win_earns_no_credit():
    journey = Journey(TouchPoint(at(0), A), at(10), [TouchPoint(at(11), B)])
    credits = credit_by_campaign([journey])
    assert credits[A].last_touch == 1 and credits[A].linear == 1
    assert B not in credits


def test_a_touch_dated_before_the_first_touch_is_not_the_last_touch():
    journey = Journey(TouchPoint(at(1), A), at(10), [TouchPoint(at(0), B)])
    credits = credit_by_campaign([journey])
    assert credits[A].first_touch == 1 and credits[A].last_touch == 1
    assert credits[B].last_touch == 0 and credits[B].linear == Fraction(1, 2)


def test_on_a_tie_the_later_touch_is_the_last_touch():
    journey = Journey(TouchPoint(at(0), A), at(10), [TouchPoint(at(0), B)])
    assert credit_by_campaign([journey])[B].last_touch == 1


def test_linear_credit_is_shared_evenly_over_the_path():
    journey = Journey(TouchPoint(at(0), A), at(10), [TouchPoint(at(1), B), TouchPoint(at(2), A)])
    credits = credit_by_campaign([journey])
    assert credits[A].linear == Fraction(2, 3) and credits[B].linear == Fraction(1, 3)


def test_touches_without_a_campaign_credit_direct_unknown():
    credits = credit_by_campaign([Journey(TouchPoint(at(0), None), at(3), [TouchPoint(at(1), A)])])
    assert credits[None].first_touch == 1 and credits[A].last_touch == 1
    assert credits[None].linear == credits[A].linear == Fraction(1, 2)


def test_each_model_gives_out_one_unit_per_customer():
    journeys = [
        Journey(TouchPoint(at(0), A), at(9), [TouchPoint(at(1), B), TouchPoint(at(2), C)]),
        Journey(TouchPoint(at(0), None), at(1)),
        Journey(TouchPoint(at(0), C), at(4), [TouchPoint(at(3), C), TouchPoint(at(8), A)]),
    ]
    credits = credit_by_campaign(journeys).values()
    assert sum(c.first_touch for c in credits) == 3
    assert sum(c.last_touch for c in credits) == 3
    assert sum(c.linear for c in credits) == 3


def test_a_customer_won_on_its_first_touch_gives_everything_to_it():
    credits = credit_by_campaign([Journey(TouchPoint(at(0), A), at(0))])
    assert (credits[A].first_touch, credits[A].last_touch, credits[A].linear) == (1, 1, 1)


# -- spend and CAC -------------------------------------------------------------------------------------------


def test_a_spend_entry_inside_the_range_counts_whole():
    assert prorated_spend(Decimal("300"), date(2026, 3, 1), date(2026, 3, 31), date(2026, 1, 1), None) == Decimal(
        "300.00"
    )


def test_a_spend_entry_half_in_the_range_counts_by_its_days():
    # March has 31 days; 10 of them (22–31) fall in the range.
    assert prorated_spend(Decimal("310"), date(2026, 3, 1), date(2026, 3, 31), date(2026, 3, 22), None) == Decimal(
        "100.00"
    )


def test_a_spend_entry_outside_the_range_counts_nothing():
    assert prorated_spend(Decimal("99"), date(2026, 3, 1), date(2026, 3, 31), None, date(2026, 2, 28)) == 0


def test_a_one_day_entry_on_the_ranges_last_day_counts_whole():
    assert prorated_spend(Decimal("10"), date(2026, 3, 5), date(2026, 3, 5), date(2026, 3, 1), date(2026, 3, 5)) == 10


def test_prorated_spend_rounds_to_the_cent():
    assert prorated_spend(Decimal("100"), date(2026, 3, 1), date(2026, 3, 3), date(2026, 3, 1), date(2026, 3, 1)) == (
        Decimal("33.33")
    )


def test_cac_is_spend_per_customer_to_the_cent():
    assert customer_acquisition_cost(Decimal("1000"), 3) == Decimal("333.33")


def test_no_customers_means_no_cac():
    assert customer_acquisition_cost(Decimal("1000"), 0) is None
