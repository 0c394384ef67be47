"""The assignment rules API (owner/admin write, staff read) and staff availability (own for staff, anyone's
for owner/admin): what a dashboard sends and gets back."""

from __future__ import annotations

import pytest

from tests.support.api import ApiResponse, call_api
from tests.support.factories import StaffCaller, make_caller


@pytest.fixture
def owner() -> StaffCaller:
    return make_caller(role="owner")


@pytest.fixture
def coach(owner) -> StaffCaller:
    return make_caller(role="coach", organization=owner.organization)


def rules_api(caller: StaffCaller, method: str, suffix: str = "", body=None) -> ApiResponse:
    return call_api(method, f"/organizations/{caller.org_id}/lead-assignment-rules{suffix}", sub=caller.sub, body=body)


def availability_api(caller: StaffCaller, who: StaffCaller, method: str = "GET", body=None) -> ApiResponse:
    path = f"/organizations/{who.org_id}/staff/{who.user.id}/availability"
    return call_api(method, path, sub=caller.sub, body=body)


def fixed(coach: StaffCaller, **more) -> dict:
    return {"name": "Coach", "strategy": "fixed", "userIds": [str(coach.user.id)], **more}


def test_a_rule_is_answered_as_saved(owner, coach):
    body = fixed(coach, sources=["whatsapp"], languages=["HE"], hoursFrom="22:00", hoursTo="06:00", capacity=30)

    rule = rules_api(owner, "POST", body=body).body["data"]

    assert {k: rule[k] for k in ("sources", "languages", "hoursFrom", "hoursTo", "capacity", "position")} == {
        "sources": ["whatsapp"],
        "languages": ["he"],
        "hoursFrom": "22:00",
        "hoursTo": "06:00",
        "capacity": 30,
        "position": 0,
    }
    assert rule["problems"] == []


@pytest.mark.parametrize(
    ("more", "code"),
    [
        ({"userIds": []}, "VALIDATION_FAILED"),
        ({"hoursFrom": "09:00"}, "ASSIGNMENT_RULE_INVALID"),
        ({"hoursFrom": "25:00", "hoursTo": "06:00"}, "VALIDATION_FAILED"),
        ({"strategy": "by_mood"}, "VALIDATION_FAILED"),
    ],
)
def test_a_rule_that_does_not_make_sense_is_refused(owner, coach, more, code):
    response = rules_api(owner, "POST", body=fixed(coach, **more))
    assert (response.status, response.error_code) == (400, code)


def test_a_fixed_rule_names_exactly_one_person(owner, coach):
    body = fixed(coach, userIds=[str(coach.user.id), str(owner.user.id)])
    assert rules_api(owner, "POST", body=body).error_code == "ASSIGNMENT_RULE_INVALID"


def test_a_rule_names_only_staff_of_the_organization(owner):
    stranger = make_caller(role="coach")
    assert rules_api(owner, "POST", body=fixed(stranger)).error_code == "ASSIGNEE_NOT_STAFF"


def test_a_rule_names_only_the_organizations_pipelines(owner, coach):
    response = rules_api(owner, "POST", body=fixed(coach, pipelineIds=["0190b6a2-7c3e-7a12-9a51-3f0e8c2b1a12"]))
    assert response.error_code == "ASSIGNMENT_RULE_UNKNOWN_REFERENCE"


def test_rules_are_listed_in_order_and_can_be_reordered(owner, coach):
    first = rules_api(owner, "POST", body=fixed(coach, name="First")).body["data"]["id"]
    second = rules_api(owner, "POST", body=fixed(coach, name="Second")).body["data"]["id"]
    on_top = rules_api(owner, "POST", body=fixed(coach, name="On top", position=0)).body["data"]["id"]
    assert [r["id"] for r in rules_api(coach, "GET").body["data"]] == [on_top, first, second]

    rules_api(owner, "PUT", "/order", body={"ruleIds": [second, first, on_top]})

    assert [r["id"] for r in rules_api(coach, "GET").body["data"]] == [second, first, on_top]
    assert rules_api(owner, "PUT", "/order", body={"ruleIds": [second]}).error_code == "ASSIGNMENT_RULE_ORDER_MISMATCH"


def test_a_rule_can_be_switched_off_and_deleted(owner, coach):
    rule_id = rules_api(owner, "POST", body=fixed(coach)).body["data"]["id"]

    assert rules_api(owner, "PATCH", f"/{rule_id}", body={"active": False}).body["data"]["active"] is False
    assert rules_api(owner, "DELETE", f"/{rule_id}").status == 200
    assert rules_api(owner, "PATCH", f"/{rule_id}", body={"active": True}).error_code == "ASSIGNMENT_RULE_NOT_FOUND"


def test_a_coach_reads_but_does_not_write_rules(owner, coach):
    assert rules_api(coach, "GET").status == 200
    assert rules_api(coach, "POST", body=fixed(coach)).error_code == "OWNER_OR_ADMIN_ONLY"


def test_staff_set_their_own_availability(coach):
    body = {"awayUntil": "2030-01-10T08:00:00Z", "workingHours": [{"day": 1, "from": "09:00", "to": "17:00"}]}

    saved = availability_api(coach, coach, "PUT", body).body["data"]

    assert (saved["awayUntil"][:19], saved["workingHours"]) == (
        "2030-01-10T08:00:00",
        [{"day": 1, "from": "09:00", "to": "17:00"}],
    )
    assert availability_api(coach, coach).body["data"]["workingHours"] == saved["workingHours"]


def test_someone_who_never_set_availability_is_always_available(owner, coach):
    assert availability_api(owner, coach).body["data"] == {
        "userId": str(coach.user.id),
        "awayUntil": None,
        "workingHours": [],
        "updatedAt": None,
    }


def test_a_coach_cannot_set_someone_elses_availability_but_an_owner_can(owner, coach):
    other = make_caller(role="coach", organization=owner.organization)
    body = {"awayUntil": None, "workingHours": []}

    assert availability_api(coach, other, "PUT", body).error_code == "OWN_AVAILABILITY_ONLY"
    assert availability_api(owner, other, "PUT", body).status == 200


def test_an_away_until_without_an_offset_is_refused(coach):
    response = availability_api(coach, coach, "PUT", {"awayUntil": "2030-01-10T08:00:00"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")
