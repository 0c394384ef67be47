"""Deals through the API: opening one with a lead, a member or both, editing, reading and listing."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api
from tests.support.conversion_helpers import convert, make_person, unique_email
from tests.support.deals_helpers import (
    deal_body,
    deals_path,
    events_of,
    history_of,
    ok,
    open_deal,
    read_deal,
    timeline_types,
)
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Deal writes publish their events after commit; the bus exists."""


@pytest.fixture
def coach():
    return make_caller(role="coach")


@pytest.fixture
def owner(coach):
    return make_caller(role="owner", organization=coach.organization)


def _create(caller, **body):
    return call_api("POST", deals_path(caller.org_id), sub=caller.sub, body=deal_body(**body))


def test_a_deal_opened_from_a_lead_lands_on_new_owned_by_the_caller(coach):
    deal = open_deal(coach)
    assert (deal["stageKind"], deal["status"], deal["assigneeUserId"], deal["version"]) == (
        "new",
        "open",
        str(coach.user.id),
        1,
    )
    assert (deal["valueMinor"], deal["currency"], deal["effectiveProbability"]) == (120_000, "EUR", 10)
    assert deal["effectiveForecastCategory"] == "pipeline"
    assert deal["membershipId"] is None


def test_opening_a_deal_is_on_its_history_the_leads_timeline_and_the_outbox(coach):
    deal = open_deal(coach)
    assert [h["type"] for h in history_of(deal["id"])] == ["created"]
    assert timeline_types(deal["leadId"])[-1] == "deal_created"
    [event] = events_of(coach.org_id, "deal.created")
    assert event["payload"]["dealId"] == deal["id"]
    assert event["payload"]["leadId"] == deal["leadId"]
    assert "title" not in event["payload"] and "valueMinor" not in event["payload"]  # ids only


def test_a_converted_leads_deal_links_the_lead_and_its_member(owner):
    lead_id = ok(
        call_api(
            "POST",
            f"/organizations/{owner.org_id}/leads",
            sub=owner.sub,
            body={"name": "Noa Levi", "email": unique_email("noa")},
        ),
        201,
    )["id"]
    conversion = convert(owner, lead_id, {"firstName": "Noa", "lastName": "Levi", "email": unique_email("noa")})
    membership_id = conversion.data["membershipId"]

    from_lead = open_deal(owner, leadId=lead_id)
    from_member = open_deal(owner, membershipId=membership_id)

    assert (from_lead["leadId"], from_lead["membershipId"]) == (lead_id, membership_id)
    assert (from_member["leadId"], from_member["membershipId"]) == (lead_id, membership_id)


def test_converting_a_lead_links_its_open_and_sealed_deals_to_the_new_member(owner):
    from tests.support.deals_helpers import create_lead, walk_to

    lead_id = create_lead(owner, "Tal")
    open_one = open_deal(owner, leadId=lead_id)
    won = walk_to(owner, open_deal(owner, leadId=lead_id), "won")

    conversion = convert(owner, lead_id, {"firstName": "Tal", "lastName": "Ben", "email": unique_email("tal")})
    membership_id = conversion.data["membershipId"]

    for deal in (open_one, won):
        after = read_deal(owner, deal["id"])
        assert (after["membershipId"], after["version"]) == (membership_id, deal["version"])
        assert after["history"][0]["type"] == "member_linked"
    assert read_deal(owner, won["id"])["status"] == "won"


def test_a_members_deal_without_a_lead_links_the_member_only(owner):
    member = make_person(owner.org_id, first_name="Avi")
    deal = open_deal(owner, membershipId=str(member.membership_id))
    assert (deal["leadId"], deal["membershipId"]) == (None, str(member.membership_id))


def test_a_lead_and_a_membership_that_do_not_belong_together_are_refused(owner):
    member = make_person(owner.org_id)
    lead_id = ok(call_api("POST", f"/organizations/{owner.org_id}/leads", sub=owner.sub, body={"name": "Ron"}), 201)[
        "id"
    ]
    response = _create(owner, leadId=lead_id, membershipId=str(member.membership_id))
    assert (response.status, response.error_code) == (400, "DEAL_PARTIES_MISMATCH")


def test_another_organizations_lead_or_member_answers_404(coach):
    stranger = make_caller(role="owner")
    foreign_member = make_person(stranger.org_id)
    foreign_lead = ok(
        call_api("POST", f"/organizations/{stranger.org_id}/leads", sub=stranger.sub, body={"name": "X"}), 201
    )["id"]
    assert _create(coach, leadId=foreign_lead).error_code == "LEAD_NOT_FOUND"
    assert _create(coach, membershipId=str(foreign_member.membership_id)).error_code == "MEMBERSHIP_NOT_FOUND"
    assert _create(coach, leadId=str(uuid.uuid4())).status == 404


def test_another_organizations_deal_answers_404_like_a_random_id(coach):
    stranger = make_caller(role="coach")
    foreign = open_deal(stranger)
    for deal_id in (foreign["id"], str(uuid.uuid4()), "not-a-uuid"):
        response = call_api("GET", deals_path(coach.org_id, deal_id), sub=coach.sub)
        assert (response.status, response.error_code) == (404, "DEAL_NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"valueMinor": 19.99}, "VALIDATION_FAILED"),  # never a float
        ({"valueMinor": "1999"}, "VALIDATION_FAILED"),
        ({"valueMinor": -1}, "VALIDATION_FAILED"),
        ({"currency": "eur"}, "VALIDATION_FAILED"),
        ({"currency": "ABC"}, "CURRENCY_UNKNOWN"),
        ({"offerType": "membership"}, "VALIDATION_FAILED"),
        ({"forecastCategory": "closed"}, "VALIDATION_FAILED"),
        ({"probability": 101}, "VALIDATION_FAILED"),
        ({"expectedCloseDate": None}, "VALIDATION_FAILED"),
    ],
)
def test_bad_input_is_a_clear_400(coach, body, code):
    lead_id = ok(call_api("POST", f"/organizations/{coach.org_id}/leads", sub=coach.sub, body={"name": "B"}), 201)["id"]
    response = _create(coach, leadId=lead_id, **body)
    assert (response.status, response.error_code) == (400, code)


def test_a_deal_needs_a_lead_or_a_member(coach):
    response = _create(coach)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_the_owner_must_be_active_staff(coach):
    member = make_person(coach.org_id, role="member")
    lead_id = ok(call_api("POST", f"/organizations/{coach.org_id}/leads", sub=coach.sub, body={"name": "C"}), 201)["id"]
    response = _create(coach, leadId=lead_id, assigneeUserId=str(member.user_id))
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")


def test_a_deal_opens_on_a_new_stage_only(coach):
    from tests.support.deals_helpers import stage_id

    lead_id = ok(call_api("POST", f"/organizations/{coach.org_id}/leads", sub=coach.sub, body={"name": "D"}), 201)["id"]
    response = _create(coach, leadId=lead_id, stageId=stage_id(coach, "proposal"))
    assert (response.status, response.error_code) == (400, "DEAL_MUST_START_NEW")


def test_members_cannot_touch_deals():
    member = make_caller(role="member")
    response = call_api("GET", deals_path(member.org_id), sub=member.sub)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_an_idempotency_key_replays_the_first_answer(coach):
    lead_id = ok(call_api("POST", f"/organizations/{coach.org_id}/leads", sub=coach.sub, body={"name": "E"}), 201)["id"]
    headers = {"idempotency-key": "deal-1"}
    first = call_api("POST", deals_path(coach.org_id), sub=coach.sub, body=deal_body(leadId=lead_id), headers=headers)
    again = call_api("POST", deals_path(coach.org_id), sub=coach.sub, body=deal_body(leadId=lead_id), headers=headers)
    assert (first.status, again.status, again.data["id"]) == (201, 201, first.data["id"])


def test_an_edit_names_the_version_it_was_made_from_and_is_recorded(coach):
    deal = open_deal(coach)
    path = deals_path(coach.org_id, deal["id"])
    edited = ok(
        call_api(
            "PATCH", path, sub=coach.sub, body={"version": 1, "valueMinor": 150_000, "probability": 30, "title": "Gold"}
        )
    )
    assert (edited["valueMinor"], edited["effectiveProbability"], edited["version"]) == (150_000, 30, 2)
    stale = call_api("PATCH", path, sub=coach.sub, body={"version": 1, "valueMinor": 1})
    assert (stale.status, stale.error_code, stale.body["error"]["currentVersion"]) == (409, "DEAL_VERSION_CONFLICT", 2)
    update = history_of(deal["id"])[-1]
    assert update["type"] == "updated"
    assert update["payload"]["fields"]["valueMinor"] == {"from": 120_000, "to": 150_000}
    assert update["payload"]["fields"]["title"] == {}  # free text: that it changed, not what it says
    assert timeline_types(deal["leadId"])[-1] == "deal_updated"
    assert events_of(coach.org_id, "deal.updated")[0]["payload"]["fields"] == ["probability", "title", "valueMinor"]


def test_the_detail_carries_the_history_newest_first(coach):
    deal = open_deal(coach)
    call_api("PATCH", deals_path(coach.org_id, deal["id"]), sub=coach.sub, body={"version": 1, "valueMinor": 5})
    detail = read_deal(coach, deal["id"])
    assert [h["type"] for h in detail["history"]] == ["updated", "created"]
    assert detail["netValueMinor"] == 5 and detail["compensations"] == []


def test_the_list_filters_and_pages_by_keyset_newest_first(coach):
    other = make_caller(role="coach", organization=coach.organization)
    mine = [open_deal(coach, currency="EUR") for _ in range(3)]
    theirs = open_deal(other, currency="ILS")
    path = deals_path(coach.org_id)

    first = call_api("GET", path, sub=coach.sub, query={"assignee": "me", "limit": "2"})
    assert [d["id"] for d in first.data] == [mine[2]["id"], mine[1]["id"]]
    second = call_api(
        "GET", path, sub=coach.sub, query={"assignee": "me", "limit": "2", "cursor": first.body["nextCursor"]}
    )
    assert [d["id"] for d in second.data] == [mine[0]["id"]] and second.body["nextCursor"] is None

    assert [d["id"] for d in call_api("GET", path, sub=coach.sub, query={"currency": "ILS"}).data] == [theirs["id"]]
    by_lead = call_api("GET", path, sub=coach.sub, query={"leadId": mine[1]["leadId"]}).data
    assert [d["id"] for d in by_lead] == [mine[1]["id"]]
    assert call_api("GET", path, sub=coach.sub, query={"status": "won"}).data == []
    both = call_api("GET", path, sub=coach.sub, query="status=open&status=stalled&assignee=me").data
    assert len(both) == 3
    bad = call_api("GET", path, sub=coach.sub, query={"cursor": "nope"})
    assert (bad.status, bad.error_code) == (400, "INVALID_CURSOR")


def test_the_list_filters_by_any_assignee_the_way_every_list_does(coach):
    other = make_caller(role="coach", organization=coach.organization)
    open_deal(coach)
    theirs = open_deal(other)
    path = deals_path(coach.org_id)
    by_user = call_api("GET", path, sub=coach.sub, query={"assignee": str(other.user.id)}).data
    assert [d["id"] for d in by_user] == [theirs["id"]] and by_user[0]["assigneeUserId"] == str(other.user.id)
    assert call_api("GET", path, sub=coach.sub, query={"assignee": "unassigned"}).data == []
    reversed_range = call_api(
        "GET", path, sub=coach.sub, query={"expectedCloseFrom": "2026-02-01", "expectedCloseTo": "2026-01-01"}
    )
    assert (reversed_range.status, reversed_range.error_code) == (400, "INVALID_PERIOD")
