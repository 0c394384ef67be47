"""G5 analytics, the funnel with time in each stage, and first-human-response times, checked against
hand-computed fixtures (analytics.rules states what each figure counts). The organization is in London,
so month and period boundaries move with daylight saving; test enquiries are left out of every figure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from leadcrm.analytics.reports import lead_analytics
from leadcrm.analytics.rules.reports import Period
from leadcrm.platform.db.engine import get_engine
from tests.support.analytics_helpers import get_analytics, history_lead
from tests.support.attention_helpers import set_timezone
from tests.support.capture_helpers import make_campaign
from tests.support.database import count_statements
from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import touch
from tests.support.lead_list_helpers import make_board

LONDON = "Europe/London"
FEBRUARY = {"from": "2026-02-01", "to": "2026-02-28"}


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.fixture
def caller():
    staff = make_caller(role="coach")
    set_timezone(staff.org_id, LONDON)
    return staff


@pytest.fixture
def board(caller):
    return make_board(caller.org_id, default=True)


@pytest.fixture
def february(caller, board):
    """Eight real leads created in February (London), and leads just outside it or marked as tests.

    | # | source   | campaign | status    | note                                   |
    | 1 | facebook | A        | converted |                                        |
    | 2 | facebook | A        | customer  |                                        |
    | 3 | facebook | A        | lost      |                                        |
    | 4 | minisite | B        | new       |                                        |
    | 5 | minisite | B        | customer  |                                        |
    | 6 | minisite | —        | contacted |                                        |
    | 7 | manual   | —        | new       |                                        |
    | 8 | manual   | —        | lost      | 28 Feb 23:59 UTC = 23:59 London: in    |
    | - | facebook | A        | converted | a test enquiry: out                    |
    | - | minisite | B        | customer  | 31 Jan 23:30 London: before the period |
    | - | manual   | —        | customer  | 1 Mar 00:00 London: after the period   |
    """
    a = make_campaign(caller.org_id, name="Spring ad")
    b = make_campaign(caller.org_id, name="Flyer")
    day = utc(2026, 2, 10, 9)
    later = day + timedelta(days=1)
    rows = [
        ("facebook", a, "converted", day, False),
        ("facebook", a, "customer", day, False),
        ("facebook", a, "lost", day, False),
        ("minisite", b, "new", day, False),
        ("minisite", b, "customer", day, False),
        ("minisite", None, "contacted", day, False),
        ("manual", None, "new", day, False),
        ("manual", None, "lost", utc(2026, 2, 28, 23, 59), False),
        ("facebook", a, "converted", day, True),
        ("minisite", b, "customer", utc(2026, 1, 31, 23, 30), False),
        ("manual", None, "customer", utc(2026, 3, 1, 0, 0), False),
    ]
    for source, campaign, status, created_at, is_test in rows:
        history = [] if status == "new" else [(status, later if created_at == day else created_at)]
        history_lead(board, created_at, history, source=source, campaign_id=campaign, is_test=is_test)
    return a, b


def test_g5_totals_wins_and_conversion_rate_over_the_period(caller, february):
    response = get_analytics(caller.sub, caller.org_id, **FEBRUARY)
    assert response.status == 200, response.body
    data = response.data
    # 3 wins (converted 1, customers 2) of 8 leads: 37.5 % rounds up to 38.
    assert (data["total"], data["wins"], data["converted"], data["customers"]) == (8, 3, 1, 2)
    assert data["conversionRate"] == 38


def test_g5_counts_by_source(caller, february):
    data = get_analytics(caller.sub, caller.org_id, **FEBRUARY).data
    assert data["bySource"] == [
        {"source": "facebook", "total": 3, "wins": 2},
        {"source": "minisite", "total": 3, "wins": 1},
        {"source": "manual", "total": 2, "wins": 0},
    ]


def test_g5_counts_by_status(caller, february):
    data = get_analytics(caller.sub, caller.org_id, **FEBRUARY).data
    assert {row["status"]: row["total"] for row in data["byStatus"]} == {
        "new": 2,
        "lost": 2,
        "customer": 2,
        "converted": 1,
        "contacted": 1,
    }


def test_g5_by_campaign_reports_totals_wins_and_win_rate(caller, february):
    a, b = february
    data = get_analytics(caller.sub, caller.org_id, **FEBRUARY).data
    assert data["byCampaign"] == [
        {"campaignId": str(a), "name": "Spring ad", "total": 3, "wins": 2, "winRate": 67},
        {"campaignId": None, "name": "No campaign", "total": 3, "wins": 0, "winRate": 0},
        {"campaignId": str(b), "name": "Flyer", "total": 2, "wins": 1, "winRate": 50},
    ]


def test_the_period_is_the_organizations_local_days(caller, february):
    period = get_analytics(caller.sub, caller.org_id, **FEBRUARY).data["period"]
    assert period == {
        "from": "2026-02-01",
        "to": "2026-02-28",
        "timezone": LONDON,
        "startsAt": "2026-02-01T00:00:00Z",
        "endsAt": "2026-03-01T00:00:00Z",
    }


def test_without_a_period_every_real_lead_counts(caller, february):
    assert get_analytics(caller.sub, caller.org_id).data["total"] == 10


def test_an_organization_with_only_test_enquiries_has_nothing_to_report(caller, board):
    history_lead(board, utc(2026, 2, 2), [("customer", utc(2026, 2, 3))], is_test=True)
    data = get_analytics(caller.sub, caller.org_id).data
    assert (data["total"], data["wins"], data["conversionRate"], data["bySource"]) == (0, 0, 0, [])


def test_created_this_month_counts_from_local_midnight_of_the_first(caller, board):
    zone = ZoneInfo(LONDON)
    local_now = datetime.now(UTC).astimezone(zone)
    start = datetime(local_now.year, local_now.month, 1, tzinfo=zone).astimezone(UTC)
    history_lead(board, start + timedelta(minutes=1))
    history_lead(board, start - timedelta(minutes=1))
    history_lead(board, start + timedelta(minutes=2), is_test=True)
    data = get_analytics(caller.sub, caller.org_id).data
    assert data["createdThisMonth"] == 1
    assert data["monthStartsAt"] == start.isoformat().replace("+00:00", "Z")


def test_this_month_in_london_begins_an_hour_before_the_utc_month_in_summer(caller, board):
    # 31 March 23:30 UTC is 1 April 00:30 in London (BST): an April lead there, a March lead in UTC.
    history_lead(board, utc(2026, 3, 31, 23, 30))
    history_lead(board, utc(2026, 3, 31, 22, 59))
    now = utc(2026, 4, 15, 12)
    with get_engine().connect() as conn:
        london = lead_analytics(conn, caller.org_id, Period(None, None), now=now, timezone=LONDON)
        in_utc = lead_analytics(conn, caller.org_id, Period(None, None), now=now, timezone="UTC")
    assert (london.created_this_month, in_utc.created_this_month) == (1, 0)


def test_a_period_ending_on_the_last_day_of_march_ends_at_midnight_bst(caller, board):
    history_lead(board, utc(2026, 3, 31, 22, 59))  # 23:59 BST on 31 March: in
    history_lead(board, utc(2026, 3, 31, 23, 0))  # 00:00 BST on 1 April: out
    data = get_analytics(caller.sub, caller.org_id, **{"from": "2026-03-31", "to": "2026-03-31"}).data
    assert data["total"] == 1
    assert data["period"]["endsAt"] == "2026-03-31T23:00:00Z"


# -- funnel and time in each stage ---------------------------------------------------------------------------

T0 = utc(2026, 5, 4, 8)


def hours(n: float) -> datetime:
    return T0 + timedelta(hours=n)


@pytest.fixture
def journeys(board):
    """Five real leads and a test one, with their status histories:

    L1 new → contacted (1 h) → trial_booked (3 h) → converted (27 h)
    L2 new → customer (5 h)                      (a purchase: skips steps, still reached them)
    L3 new → contacted (2 h) → lost (12 h)
    L4 new                                       (still new)
    L5 new → trial_booked (4 h) → no_show (28 h) → lost (30 h)
    test: new → contacted → trial_booked → converted, with days in each stage (left out)
    """
    history_lead(board, T0, [("contacted", hours(1)), ("trial_booked", hours(3)), ("converted", hours(27))])
    history_lead(board, T0, [("customer", hours(5))])
    history_lead(board, T0, [("contacted", hours(2)), ("lost", hours(12))])
    history_lead(board, T0)
    history_lead(board, T0, [("trial_booked", hours(4)), ("no_show", hours(28)), ("lost", hours(30))])
    history_lead(
        board,
        T0,
        [("contacted", hours(100)), ("trial_booked", hours(200)), ("converted", hours(300))],
        is_test=True,
    )
    return board


MAY = {"from": "2026-05-01", "to": "2026-05-31"}


def test_the_funnel_counts_each_lead_at_every_step_it_reached(caller, journeys):
    data = get_analytics(caller.sub, caller.org_id, "funnel", **MAY).data
    assert data["total"] == 5
    assert [(s["step"], s["reached"], s["conversionFromPrevious"]) for s in data["steps"]] == [
        ("new", 5, None),
        ("contacted", 4, 80),  # L1, L2, L3, L5
        ("trial", 3, 75),  # L1, L2, L5
        ("won", 2, 67),  # L1, L2
    ]


def test_time_in_each_stage_is_the_average_of_the_stays_that_ended(caller, journeys):
    data = get_analytics(caller.sub, caller.org_id, "funnel", **MAY).data
    stages = {s["category"]: s for s in data["stages"]}
    hour = 3600.0
    # new: L1 1 h, L2 5 h, L3 2 h, L5 4 h ended; L4 is still there.
    assert (stages["new"]["completedStays"], stages["new"]["current"]) == (4, 1)
    assert stages["new"]["averageSeconds"] == 3 * hour
    # contacted: L1 2 h, L3 10 h.
    assert (stages["contacted"]["completedStays"], stages["contacted"]["averageSeconds"]) == (2, 6 * hour)
    # trial booked: L1 24 h, L5 24 h; no show: L5 2 h.
    assert (stages["trial_booked"]["completedStays"], stages["trial_booked"]["averageSeconds"]) == (2, 24 * hour)
    assert (stages["no_show"]["completedStays"], stages["no_show"]["averageSeconds"]) == (1, 2 * hour)
    # Where leads are now: no stay has ended, so no time.
    lost = stages["lost"]
    assert (lost["completedStays"], lost["current"], lost["averageSeconds"]) == (0, 2, None)
    assert (stages["converted"]["current"], stages["customer"]["current"]) == (1, 1)
    assert stages["new"]["stageId"] == str(journeys.stages["new"])


def test_without_a_period_the_funnel_still_leaves_test_enquiries_out(caller, journeys):
    data = get_analytics(caller.sub, caller.org_id, "funnel").data
    assert [s["reached"] for s in data["steps"]] == [5, 4, 3, 2]
    stages = {s["category"]: s for s in data["stages"]}
    assert (stages["contacted"]["completedStays"], stages["contacted"]["averageSeconds"]) == (2, 6 * 3600.0)


def test_the_funnel_of_a_period_without_leads_is_empty(caller, journeys):
    data = get_analytics(caller.sub, caller.org_id, "funnel", **{"from": "2026-06-01", "to": "2026-06-30"}).data
    assert (data["total"], data["stages"]) == (0, [])
    assert [s["reached"] for s in data["steps"]] == [0, 0, 0, 0]


# -- first human response ------------------------------------------------------------------------------------


@pytest.fixture
def responses(board):
    """March (London): answered after 60 s, 600 s and 3600 s, one not answered yet; April (London, though
    31 March in UTC): answered after 120 s; a test enquiry answered after 5 s."""
    history_lead(board, utc(2026, 3, 10, 9), responded_after=timedelta(seconds=60))
    history_lead(board, utc(2026, 3, 11, 9), responded_after=timedelta(seconds=600))
    history_lead(board, utc(2026, 3, 12, 9), responded_after=timedelta(seconds=3600))
    history_lead(board, utc(2026, 3, 13, 9))
    history_lead(board, utc(2026, 3, 31, 23, 30), responded_after=timedelta(seconds=120))
    history_lead(board, utc(2026, 3, 14, 9), responded_after=timedelta(seconds=5), is_test=True)


def test_median_and_p90_of_the_first_human_response_over_the_period(caller, responses):
    data = get_analytics(caller.sub, caller.org_id, "response-times", **{"from": "2026-03-01", "to": "2026-04-30"}).data
    assert (data["leads"], data["responded"]) == (5, 4)
    # [60, 120, 600, 3600]: median (120 + 600) / 2; p90 at 0.9 × 3 = 2.7 → 600 + 0.7 × 3000.
    assert (data["medianSeconds"], data["p90Seconds"]) == (360.0, 2700.0)
    assert "first_human_response_at" in data["counted"]


def test_response_times_per_month_follow_the_organizations_timezone(caller, responses):
    data = get_analytics(caller.sub, caller.org_id, "response-times", **{"from": "2026-03-01", "to": "2026-04-30"}).data
    assert data["byMonth"] == [
        # [60, 600, 3600]: p90 at 0.9 × 2 = 1.8 → 600 + 0.8 × 3000.
        {"month": "2026-03", "leads": 4, "responded": 3, "medianSeconds": 600.0, "p90Seconds": 3000.0},
        {"month": "2026-04", "leads": 1, "responded": 1, "medianSeconds": 120.0, "p90Seconds": 120.0},
    ]


def test_the_automatic_steps_of_a_new_lead_are_not_a_human_response(caller):
    created = touch_free_lead(caller)
    data = get_analytics(caller.sub, caller.org_id, "response-times").data
    assert (data["leads"], data["responded"], data["medianSeconds"]) == (1, 0, None)
    assert touch(caller, created, {"channel": "call", "outcome": "contact_attempted"}).status == 200
    assert get_analytics(caller.sub, caller.org_id, "response-times").data["responded"] == 1


def touch_free_lead(caller) -> str:
    """A lead created by staff: the auto-task, its follow-up and the lead_created entry are all automatic."""
    from tests.support.api import call_api, leads_path

    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Dana Cohen"})
    assert response.status == 201, response.body
    return response.data["id"]


# -- cost ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("view", "most"), [(None, 3), ("funnel", 5), ("response-times", 3), ("campaigns", 7)])
def test_each_analytics_route_costs_a_few_statements_whatever_the_data(caller, february, view, most):
    """The caller, the timezone, then the figures (the funnel: + the rollup fold and stage names; campaigns: +
    jit off, the rollup fold, spend, names). The fold is one statement whatever is queued."""
    with count_statements(get_engine()) as log:
        response = get_analytics(caller.sub, caller.org_id, view, **FEBRUARY)
    assert response.status == 200
    print(f"\n[sql] {view}: {len(log)} statements")
    assert len(log) <= most, log.describe()


# -- bad input and access ------------------------------------------------------------------------------------


@pytest.mark.parametrize("view", [None, "funnel", "response-times", "campaigns"])
def test_from_after_to_is_a_400_invalid_period(caller, view):
    response = get_analytics(caller.sub, caller.org_id, view, **{"from": "2026-03-02", "to": "2026-03-01"})
    assert (response.status, response.error_code) == (400, "INVALID_PERIOD")


@pytest.mark.parametrize("query", [{"to": "9999-12-31"}, {"from": "0001-01-01"}, {"to": "0"}])
def test_a_day_outside_the_calendar_is_a_400_not_a_500(caller, query):
    """The API's one calendar (1900-01-01 to 2999-12-31, api.fields.Day) refuses it before the report."""
    response = get_analytics(caller.sub, caller.org_id, "funnel", **query)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


@pytest.mark.parametrize("value", ["2026-13-01", "yesterday", "2026-02-30"])
def test_a_date_that_is_not_a_day_is_a_400(caller, value):
    response = get_analytics(caller.sub, caller.org_id, **{"from": value})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_member_may_not_read_analytics(caller):
    member = make_caller(role="member", organization=caller.organization)
    assert get_analytics(member.sub, caller.org_id).status == 403


def test_another_organizations_analytics_answer_like_one_you_do_not_belong_to(caller):
    other = make_caller()
    response = get_analytics(caller.sub, other.org_id)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")
