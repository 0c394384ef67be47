"""The forecast against a hand-computed fixture: an organization in Asia/Jerusalem, two owners, EUR and ILS.

Stage defaults (the seeded pipeline): New 10 % and Discovery 25 % are `pipeline`, Proposal 50 % and
Negotiation 75 % are `best_case`. Open deals count in the month of their expected close date; closed ones
in the organization-local month they closed in.

| # | owner | stage / status | value | cur | expected / created → closed (UTC) | counts in |
|---|---|---|---|---|---|---|
| 1 | A | new, open | 100 000 | EUR | exp 2026-11-10 | Nov pipeline; weighted 100 000 × 10 % |
| 2 | A | proposal, open | 200 000 | EUR | exp 2026-11-20 | Nov best case; × 50 % |
| 3 | A | negotiation, open, own 90 % commit | 300 000 | EUR | exp 2026-11-25 | Nov commit; × 90 % |
| 4 | A | discovery, open | 50 000 | ILS | exp 2026-11-05 | Nov pipeline, ILS; × 25 % |
| 5 | A | won | 150 000 | EUR | 10-01 00:00 → 11-30 23:30 (Dec 1 01:30 local) | Dec won; 60.98 days |
| 6 | A | won | 80 000 | EUR | 11-01 10:00 → 11-11 10:00 | Nov won; 10 days |
| 7 | A | lost | 40 000 | EUR | closed 11-15 12:00 | Nov lost |
| 8 | A | proposal, stalled | 70 000 | EUR | exp 2026-11-28 | Nov stalled (not weighted) |
| 9 | A | new, open | 999 | EUR | exp 2027-02-01 | outside the window |
| 10 | A | won | 10 000 | EUR | 09-20 21:30 → 09-30 21:30 (Oct 1 00:30 local, IDT) | Oct won; 10 days |
| 11 | B | negotiation, open | 500 000 | EUR | exp 2026-11-30 | Nov best case; × 75 % |
| 12 | B | lost | 60 000 | EUR | closed 11-20 08:00 | Nov lost |
| 13 | B | discovery, open | 333 | EUR | exp 2026-11-12 | Nov pipeline; × 25 % = 83.25 |

Weighted, November EUR: A = 100 000 × 10 + 200 000 × 50 + 300 000 × 90 = 38 000 000 → / 100 = 380 000
(the stalled deal is left out); B = 500 000 × 75 + 333 × 25 = 37 508 325 → 375 083.25 → 375 083; all owners
= 75 508 325 → 755 083 (rounded once, on the sum). Win rate, November EUR: 1 won of 3 closed = 0.3333.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from sqlalchemy import update

from leadcrm.directory.tables import organizations
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.deals_helpers import deals_path, insert_deal
from tests.support.factories import make_caller


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def fixture(database_url):
    a = make_caller(role="owner")
    b = make_caller(role="coach", organization=a.organization)
    org = a.org_id
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == org).values(timezone="Asia/Jerusalem"))
    nov = date(2026, 11, 1)
    rows = [
        dict(owner=a, kind="new", value_minor=100_000, expected_close_date=date(2026, 11, 10)),
        dict(owner=a, kind="proposal", value_minor=200_000, expected_close_date=date(2026, 11, 20)),
        dict(
            owner=a,
            kind="negotiation",
            value_minor=300_000,
            expected_close_date=date(2026, 11, 25),
            probability=90,
            forecast_category="commit",
        ),
        dict(owner=a, kind="discovery", value_minor=50_000, currency="ILS", expected_close_date=date(2026, 11, 5)),
        dict(
            owner=a,
            kind="won",
            value_minor=150_000,
            expected_close_date=nov,
            created_at=_at("2026-10-01T00:00:00"),
            closed_at=_at("2026-11-30T23:30:00"),
        ),
        dict(
            owner=a,
            kind="won",
            value_minor=80_000,
            expected_close_date=nov,
            created_at=_at("2026-11-01T10:00:00"),
            closed_at=_at("2026-11-11T10:00:00"),
        ),
        dict(owner=a, kind="lost", value_minor=40_000, expected_close_date=nov, closed_at=_at("2026-11-15T12:00:00")),
        dict(owner=a, kind="proposal", status="stalled", value_minor=70_000, expected_close_date=date(2026, 11, 28)),
        dict(owner=a, kind="new", value_minor=999, expected_close_date=date(2027, 2, 1)),
        dict(
            owner=a,
            kind="won",
            value_minor=10_000,
            expected_close_date=nov,
            created_at=_at("2026-09-20T21:30:00"),
            closed_at=_at("2026-09-30T21:30:00"),
        ),
        dict(owner=b, kind="negotiation", value_minor=500_000, expected_close_date=date(2026, 11, 30)),
        dict(owner=b, kind="lost", value_minor=60_000, expected_close_date=nov, closed_at=_at("2026-11-20T08:00:00")),
        dict(owner=b, kind="discovery", value_minor=333, expected_close_date=date(2026, 11, 12)),
    ]
    for row in rows:
        owner = row.pop("owner")
        insert_deal(org, owner_user_id=owner.user.id, **row)
    return a, b


def _forecast(caller, **query):
    response = call_api("GET", f"{deals_path(caller.org_id)}/forecast", sub=caller.sub, query=query)
    assert response.status == 200, response.body
    return response.data


def _row(document, period_start, currency, owner=None):
    found = [
        r
        for r in document["rows"]
        if r["periodStart"] == period_start
        and r["currency"] == currency
        and (r["allAssignees"] if owner is None else r["assigneeUserId"] == str(owner.user.id))
    ]
    assert len(found) == 1, document["rows"]
    return found[0]


def _cv(count, value):
    return {"count": count, "valueMinor": value}


NONE = _cv(0, 0)


def test_november_in_euro_per_owner_and_for_all_owners(fixture):
    a, b = fixture
    document = _forecast(a, interval="month", **{"from": "2026-10-01", "to": "2026-12-31"})
    assert (document["timezone"], document["start"], document["end"]) == ("Asia/Jerusalem", "2026-10-01", "2027-01-01")

    assert _row(document, "2026-11-01", "EUR", a) == {
        "periodStart": "2026-11-01",
        "currency": "EUR",
        "assigneeUserId": str(a.user.id),
        "allAssignees": False,
        "pipeline": _cv(1, 100_000),
        "bestCase": _cv(1, 200_000),
        "commit": _cv(1, 300_000),
        "closed": _cv(2, 120_000),
        "stalled": _cv(1, 70_000),
        "weightedPipelineMinor": 380_000,
        "closedWon": _cv(1, 80_000),
        "closedLost": _cv(1, 40_000),
        "winRate": 0.5,
        "averageCycleDays": 10.0,
    }
    b_row = _row(document, "2026-11-01", "EUR", b)
    assert (b_row["pipeline"], b_row["bestCase"], b_row["commit"], b_row["stalled"]) == (
        _cv(1, 333),
        _cv(1, 500_000),
        NONE,
        NONE,
    )
    assert (b_row["weightedPipelineMinor"], b_row["closedWon"], b_row["closedLost"]) == (375_083, NONE, _cv(1, 60_000))
    assert (b_row["winRate"], b_row["averageCycleDays"]) == (0.0, None)

    total = _row(document, "2026-11-01", "EUR")
    assert total["assigneeUserId"] is None
    assert (total["pipeline"], total["bestCase"], total["commit"], total["stalled"]) == (
        _cv(2, 100_333),
        _cv(2, 700_000),
        _cv(1, 300_000),
        _cv(1, 70_000),
    )
    assert (total["weightedPipelineMinor"], total["closedWon"], total["closedLost"], total["closed"]) == (
        755_083,
        _cv(1, 80_000),
        _cv(2, 100_000),
        _cv(3, 180_000),
    )
    assert (total["winRate"], total["averageCycleDays"]) == (0.3333, 10.0)


def test_currencies_are_never_added_together(fixture):
    a, _ = fixture
    document = _forecast(a, interval="month", **{"from": "2026-11-01", "to": "2026-11-30"})
    ils = _row(document, "2026-11-01", "ILS")
    assert (ils["pipeline"], ils["weightedPipelineMinor"], ils["bestCase"]) == (_cv(1, 50_000), 12_500, NONE)
    assert {r["currency"] for r in document["rows"]} == {"EUR", "ILS"}


def test_closed_deals_count_in_the_organizations_local_month(fixture):
    a, _ = fixture
    document = _forecast(a, interval="month", **{"from": "2026-10-01", "to": "2026-12-31"})
    # Closed 23:30 UTC on Nov 30 = Dec 1 local; closed 21:30 UTC on Sep 30 = Oct 1 local (summer time).
    december, october = _row(document, "2026-12-01", "EUR"), _row(document, "2026-10-01", "EUR")
    assert (december["closedWon"], december["winRate"], december["averageCycleDays"]) == (_cv(1, 150_000), 1.0, 61.0)
    assert (october["closedWon"], october["averageCycleDays"]) == (_cv(1, 10_000), 10.0)
    assert all(r["periodStart"] != "2027-02-01" for r in document["rows"])  # outside the window


def test_a_quarter_rolls_its_months_up(fixture):
    a, _ = fixture
    document = _forecast(a, interval="quarter", **{"from": "2026-10-01", "to": "2026-12-31"})
    q4 = _row(document, "2026-10-01", "EUR")
    assert (q4["closedWon"], q4["closedLost"], q4["pipeline"]) == (_cv(3, 240_000), _cv(2, 100_000), _cv(2, 100_333))
    # won cycles 60.979, 10 and 10 days → 26.993 → 27.0; win rate 3 of 5.
    assert (q4["winRate"], q4["averageCycleDays"], q4["weightedPipelineMinor"]) == (0.6, 27.0, 755_083)


def test_one_owners_forecast(fixture):
    a, b = fixture
    document = _forecast(a, interval="month", assignee=str(b.user.id), **{"from": "2026-11-01", "to": "2026-11-30"})
    groups = {(r["assigneeUserId"], r["allAssignees"]) for r in document["rows"]}
    assert groups == {(str(b.user.id), False), (None, True)}
    assert _row(document, "2026-11-01", "EUR")["weightedPipelineMinor"] == 375_083


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"from": "2026-12-01", "to": "2026-11-01"}, "INVALID_PERIOD"),
        ({"from": "2020-01-01", "to": "2026-11-01"}, "INVALID_PERIOD"),
        ({"interval": "week"}, "VALIDATION_FAILED"),
        ({"from": "yesterday"}, "VALIDATION_FAILED"),
    ],
)
def test_a_bad_window_is_a_400(fixture, query, code):
    a, _ = fixture
    response = call_api("GET", f"{deals_path(a.org_id)}/forecast", sub=a.sub, query=query)
    assert (response.status, response.error_code) == (400, code)


def test_members_do_not_read_the_forecast(fixture):
    a, _ = fixture
    member = make_caller(role="member", organization=a.organization)
    assert call_api("GET", f"{deals_path(a.org_id)}/forecast", sub=member.sub).status == 403
