"""Campaign spend (owner/admin) and the per-campaign attribution report: customers acquired within the
attribution window, prorated spend, CAC, first-touch / last-touch / linear credit — against a
hand-computed fixture (the credit rule itself: tests/unit/leads/test_attribution_rules.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.analytics_helpers import add_touch, get_analytics, history_lead, spend_path
from tests.support.api import call_api
from tests.support.capture_helpers import make_campaign
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import make_board

MARCH = {"from": "2026-03-01", "to": "2026-03-31"}


def mar(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def coach(owner):
    return make_caller(role="coach", organization=owner.organization)


def add_spend(caller, campaign, start, end, amount, currency="ILS"):
    body = {"periodStart": start, "periodEnd": end, "amount": amount, "currency": currency}
    return call_api("POST", spend_path(caller.org_id, campaign), sub=caller.sub, body=body)


@pytest.fixture
def march(owner):
    """Campaigns A and B; spend A 310 over March, B 300 over 15 March–13 April (17 of its 30 days in March).

    Leads acquired (first touch) in March:
    | lead | first | later touches                  | won     | customer?                  |
    | C1   | A 2/3 | B 5/3                          | 10/3    | yes: path A, B             |
    | C2   | A 3/3 |                                | 4/3     | yes: path A                |
    | C3   | B 4/3 | none 6/3, A 8/3, B 25/3 (late) | 20/3    | yes: path B, none, A       |
    | C4   | A 5/3 |                                | 1/7     | no: 118 days > 90          |
    | C5   | — 6/3 |                                | 7/3     | yes: Direct / Unknown      |
    | C6   | B 7/3 |                                | never   | no                         |
    Left out: a test enquiry (A, won) and C7 (A, acquired 27 February, won 2 March).
    """
    board = make_board(owner.org_id, default=True)
    a = make_campaign(owner.org_id, name="Spring ad")
    b = make_campaign(owner.org_id, name="Flyer")
    assert add_spend(owner, a, "2026-03-01", "2026-03-31", "310.00").status == 201
    assert add_spend(owner, b, "2026-03-15", "2026-04-13", "300.00").status == 201

    def customer(first_at, campaign, won_at, *, is_test=False):
        history = [("customer", won_at)] if won_at else []
        return history_lead(board, first_at, history, campaign_id=campaign, source="facebook", is_test=is_test)

    c1 = customer(mar(2), a, mar(10))
    add_touch(board, c1, mar(5), b)
    customer(mar(3), a, mar(4))
    c3 = customer(mar(4), b, mar(20))
    add_touch(board, c3, mar(6), None, kind="email_reply")
    add_touch(board, c3, mar(8), a)
    add_touch(board, c3, mar(25), b)
    customer(mar(5), a, datetime(2026, 7, 1, tzinfo=UTC))
    customer(mar(6), None, mar(7))
    customer(mar(7), b, None)
    customer(mar(8), a, mar(9), is_test=True)
    customer(datetime(2026, 2, 27, tzinfo=UTC), a, mar(2))
    return a, b


def _by_campaign(data):
    return {row["campaignId"]: row for row in data["campaigns"]}


def test_customers_are_leads_won_within_the_window_of_their_first_touch(owner, march):
    a, b = march
    data = get_analytics(owner.sub, owner.org_id, "campaigns", **MARCH).data
    assert (data["acquired"], data["customers"], data["windowDays"]) == (6, 4, 90)
    rows = _by_campaign(data)
    assert (rows[str(a)]["acquired"], rows[str(a)]["customers"]) == (3, 2)  # C1, C2; C4 won too late
    assert (rows[str(b)]["acquired"], rows[str(b)]["customers"]) == (2, 1)  # C3; C6 never won
    assert (rows[None]["name"], rows[None]["acquired"], rows[None]["customers"]) == ("No campaign", 1, 1)


def test_acquisitions_per_first_touch_channel_name_direct_unknown(owner, march):
    data = get_analytics(owner.sub, owner.org_id, "campaigns", **MARCH).data
    assert data["channels"] == [
        {"channel": "facebook", "label": "facebook", "acquired": 5, "customers": 3},  # C1–C4, C6; C1–C3
        {"channel": "direct_unknown", "label": "Direct / Unknown", "acquired": 1, "customers": 1},  # C5
    ]


def test_spend_is_prorated_to_the_period_and_cac_is_spend_per_customer(owner, march):
    a, b = march
    data = get_analytics(owner.sub, owner.org_id, "campaigns", **MARCH).data
    rows = _by_campaign(data)
    assert (data["spend"], data["currency"]) == ("480.00", "ILS")
    assert (rows[str(a)]["spend"], rows[str(a)]["cac"]) == ("310.00", "155.00")
    assert (rows[str(b)]["spend"], rows[str(b)]["cac"]) == ("170.00", "170.00")
    assert (rows[None]["spend"], rows[None]["cac"]) == ("0.00", None)


def test_first_last_and_linear_credit_per_campaign(owner, march):
    a, b = march
    rows = _by_campaign(get_analytics(owner.sub, owner.org_id, "campaigns", **MARCH).data)
    # first: A ← C1, C2; B ← C3; none ← C5.  last: A ← C2, C3; B ← C1; none ← C5.
    # linear: A = ½ (C1) + 1 (C2) + ⅓ (C3); B = ½ (C1) + ⅓ (C3); none = ⅓ (C3) + 1 (C5).
    assert rows[str(a)]["credit"] == {"firstTouch": 2.0, "lastTouch": 2.0, "linear": 1.83}
    assert rows[str(b)]["credit"] == {"firstTouch": 1.0, "lastTouch": 1.0, "linear": 0.83}
    assert rows[None]["credit"] == {"firstTouch": 1.0, "lastTouch": 1.0, "linear": 1.33}


def test_a_longer_window_counts_the_late_customer(owner, march):
    a, _ = march
    rows = _by_campaign(get_analytics(owner.sub, owner.org_id, "campaigns", windowDays="200", **MARCH).data)
    assert (rows[str(a)]["customers"], rows[str(a)]["cac"]) == (3, "103.33")


def test_the_window_comes_from_attribution_window_days(owner, march, monkeypatch):
    monkeypatch.setenv("ATTRIBUTION_WINDOW_DAYS", "5")
    data = get_analytics(owner.sub, owner.org_id, "campaigns", **MARCH).data
    # Only C2 (1 day) and C5 (1 day) won within 5 days; C1 took 8, C3 16.
    assert (data["windowDays"], data["customers"]) == (5, 2)


def test_coaches_read_the_report(coach, march):
    assert get_analytics(coach.sub, coach.org_id, "campaigns", **MARCH).status == 200


# -- spend entries -------------------------------------------------------------------------------------------


@pytest.fixture
def campaign(owner):
    return make_campaign(owner.org_id, name="Spring ad")


def test_an_owner_records_a_campaigns_spend(owner, campaign):
    response = add_spend(owner, campaign, "2026-03-01", "2026-03-31", "1234.50")
    assert response.status == 201, response.body
    assert {k: response.data[k] for k in ("campaignId", "periodStart", "periodEnd", "amount", "currency")} == {
        "campaignId": str(campaign),
        "periodStart": "2026-03-01",
        "periodEnd": "2026-03-31",
        "amount": "1234.50",
        "currency": "ILS",
    }
    listed = call_api("GET", spend_path(owner.org_id, campaign), sub=owner.sub)
    assert [e["id"] for e in listed.data] == [response.data["id"]]


def test_overlapping_periods_of_one_campaign_are_a_409(owner, campaign):
    first = add_spend(owner, campaign, "2026-03-01", "2026-03-31", "100")
    response = add_spend(owner, campaign, "2026-03-31", "2026-04-30", "100")
    assert (response.status, response.error_code) == (409, "SPEND_PERIOD_OVERLAP")
    assert response.body["error"]["existingSpendId"] == first.data["id"]
    assert add_spend(owner, campaign, "2026-04-01", "2026-04-30", "100").status == 201


def test_an_organization_records_spend_in_one_currency(owner, campaign):
    add_spend(owner, campaign, "2026-03-01", "2026-03-31", "100", "ILS")
    other = make_campaign(owner.org_id, name="Other")
    response = add_spend(owner, other, "2026-03-01", "2026-03-31", "100", "EUR")
    assert (response.status, response.error_code) == (422, "SPEND_CURRENCY_MISMATCH")


@pytest.mark.parametrize(
    "body",
    [
        {"periodStart": "2026-03-31", "periodEnd": "2026-03-01", "amount": "1", "currency": "ILS"},
        {"periodStart": "2026-03-01", "periodEnd": "2026-03-31", "amount": "-1", "currency": "ILS"},
        {"periodStart": "2026-03-01", "periodEnd": "2026-03-31", "amount": "1.001", "currency": "ILS"},
        {"periodStart": "2026-03-01", "periodEnd": "2026-03-31", "amount": "1", "currency": "shekel"},
        {"periodStart": "2026-03-01", "periodEnd": "2026-03-31", "amount": "1"},
    ],
)
def test_bad_spend_is_a_400(owner, campaign, body):
    response = call_api("POST", spend_path(owner.org_id, campaign), sub=owner.sub, body=body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_an_owner_changes_and_deletes_a_spend_entry(owner, campaign):
    entry = add_spend(owner, campaign, "2026-03-01", "2026-03-31", "100").data
    changed = call_api(
        "PATCH", spend_path(owner.org_id, campaign, entry["id"]), sub=owner.sub, body={"amount": "250", "note": "net"}
    )
    assert changed.status == 200, changed.body
    assert (changed.data["amount"], changed.data["note"], changed.data["periodEnd"]) == ("250.00", "net", "2026-03-31")
    ends_before = call_api(
        "PATCH", spend_path(owner.org_id, campaign, entry["id"]), sub=owner.sub, body={"periodEnd": "2026-02-01"}
    )
    assert (ends_before.status, ends_before.error_code) == (400, "INVALID_PERIOD")
    assert call_api("DELETE", spend_path(owner.org_id, campaign, entry["id"]), sub=owner.sub).status == 204
    gone = call_api("DELETE", spend_path(owner.org_id, campaign, entry["id"]), sub=owner.sub)
    assert (gone.status, gone.error_code) == (404, "SPEND_NOT_FOUND")


def test_coaches_may_not_touch_spend(coach, campaign):
    assert add_spend(coach, campaign, "2026-03-01", "2026-03-31", "100").status == 403
    assert call_api("GET", spend_path(coach.org_id, campaign), sub=coach.sub).status == 403


def test_another_organizations_campaign_answers_404(owner):
    foreign = make_campaign(make_caller().org_id)
    response = add_spend(owner, foreign, "2026-03-01", "2026-03-31", "100")
    assert (response.status, response.error_code) == (404, "CAMPAIGN_NOT_FOUND")
    listed = call_api("GET", spend_path(owner.org_id, foreign), sub=owner.sub)
    assert (listed.status, listed.error_code) == (404, "CAMPAIGN_NOT_FOUND")
