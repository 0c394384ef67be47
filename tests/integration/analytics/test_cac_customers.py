"""CAC counts the customer the spec defines (crm-workflows section 7): "a lead that converted to a
Closed-Won deal within the attribution window". A lead is a customer when it reached a won status or a deal
linked to it closed won, whichever came first, within the window of its first touch; once."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from tests.support.analytics_helpers import add_touch, get_analytics, history_lead
from tests.support.capture_helpers import make_campaign
from tests.support.deals_helpers import insert_deal
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import make_board

MARCH = {"from": "2026-03-01", "to": "2026-03-31"}


def mar(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def board(owner):
    return make_board(owner.org_id, default=True)


@pytest.fixture
def campaign(owner):
    return make_campaign(owner.org_id, name="Spring ad")


def won_deal(owner, lead_id, closed_at: datetime) -> None:
    insert_deal(
        owner.org_id,
        kind="won",
        value_minor=10_000,
        expected_close_date=date(2026, 3, 31),
        closed_at=closed_at,
        lead_id=lead_id,
    )


def campaign_row(owner, campaign, **query):
    data = get_analytics(owner.sub, owner.org_id, "campaigns", **{**MARCH, **query}).data
    return data, next(row for row in data["campaigns"] if row["campaignId"] == str(campaign))


def test_a_lead_whose_linked_deal_closes_won_inside_the_window_is_a_customer(owner, board, campaign):
    lead = history_lead(board, mar(2), [("contacted", mar(3))], campaign_id=campaign)
    won_deal(owner, lead, mar(10))
    data, row = campaign_row(owner, campaign)
    assert (data["customers"], row["acquired"], row["customers"]) == (1, 1, 1)


def test_a_deal_won_after_the_window_does_not_make_a_customer(owner, board, campaign):
    lead = history_lead(board, mar(2), [("contacted", mar(3))], campaign_id=campaign)
    won_deal(owner, lead, datetime(2026, 7, 1, tzinfo=UTC))  # 121 days after the first touch
    data, row = campaign_row(owner, campaign)
    assert (data["customers"], row["customers"]) == (0, 0)


def test_a_status_win_and_a_deal_win_are_one_customer(owner, board, campaign):
    lead = history_lead(board, mar(2), [("customer", mar(8))], campaign_id=campaign)
    won_deal(owner, lead, mar(9))
    won_deal(owner, lead, mar(12))
    data, row = campaign_row(owner, campaign)
    assert (data["customers"], row["customers"]) == (1, 1)
    assert data["channels"][0]["customers"] == 1


def test_the_earliest_win_decides_the_window_and_the_path(owner, board, campaign):
    other = make_campaign(owner.org_id, name="Flyer")
    # The status win (July) is past the window; the deal closed won on 10 March is inside it.
    lead = history_lead(board, mar(2), [("customer", datetime(2026, 7, 1, tzinfo=UTC))], campaign_id=campaign)
    won_deal(owner, lead, mar(10))
    add_touch(board, lead, mar(5), other)  # before the first win: on the path
    add_touch(board, lead, mar(20), other)  # after it: not
    data, row = campaign_row(owner, campaign)
    assert (data["customers"], row["customers"]) == (1, 1)
    assert row["credit"] == {"firstTouch": 1.0, "lastTouch": 0.0, "linear": 0.5}


def test_a_deal_win_counts_in_a_period_that_is_not_whole_local_days_too(owner, board, campaign):
    """Periods the rollups cannot answer are read from the source rows under the same rule."""
    from leadcrm.analytics.attribution_report import attribution_report
    from leadcrm.analytics.rules.reports import DEFAULT_ATTRIBUTION_WINDOW, Period
    from leadcrm.platform.db.engine import get_engine

    lead = history_lead(board, mar(2), [("contacted", mar(3))], campaign_id=campaign)
    won_deal(owner, lead, mar(10))
    with get_engine().begin() as conn:
        report = attribution_report(
            conn, owner.org_id, Period(mar(1, 6), mar(31, 6)), (None, None), DEFAULT_ATTRIBUTION_WINDOW
        )
    assert report.customers == 1
