"""Campaign hooks (staff): manual buckets, the list, rename/recolour/archive; gates, 404s, bad input; and the
conflict-safe find-or-create integrations and minisite surfaces share."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from leadcrm.leads import campaigns as campaign_service
from tests.support.api import call_api
from tests.support.capture_helpers import campaigns_of, make_campaign
from tests.support.factories import make_caller


def _path(org_id, campaign_id=None) -> str:
    base = f"/organizations/{org_id}/leads/campaigns"
    return base if campaign_id is None else f"{base}/{campaign_id}"


def _create(caller, body):
    return call_api("POST", _path(caller.org_id), sub=caller.sub, body=body)


def _list(caller, **query):
    return call_api("GET", _path(caller.org_id), sub=caller.sub, query=query or None)


def _patch(caller, campaign_id, body):
    return call_api("PATCH", _path(caller.org_id, campaign_id), sub=caller.sub, body=body)


# --- create ------------------------------------------------------------------------------------------------


def test_staff_create_a_manual_bucket_with_201():
    caller = make_caller()
    response = _create(caller, {"name": "Flyers May", "color": "#ff8800"})
    assert response.status == 201
    campaign = response.data
    assert (campaign["name"], campaign["channel"], campaign["externalRef"], campaign["color"]) == (
        "Flyers May",
        "manual",
        None,
        "#ff8800",
    )
    assert uuid.UUID(campaign["id"]).version == 7


def test_a_manual_bucket_may_name_its_channel():
    assert _create(make_caller(), {"name": "Radio", "channel": "radio_ads"}).data["channel"] == "radio_ads"


def test_two_manual_buckets_may_share_a_name():
    caller = make_caller()
    assert _create(caller, {"name": "Flyers"}).status == 201
    assert _create(caller, {"name": "Flyers"}).status == 201


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": "Ok", "channel": "Bad Channel"},
        {"name": "Ok", "color": "url(javascript:x)"},
        {"name": "Ok", "externalRef": "form-1"},
        {"name": "Ok", "extra": 1},
    ],
    ids=["empty", "blank-name", "spaces", "long-name", "bad-channel", "bad-color", "external-ref", "unknown"],
)
def test_bad_input_is_a_400(body):
    response = _create(make_caller(), body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_malformed_json_is_a_400():
    caller = make_caller()
    response = call_api("POST", _path(caller.org_id), sub=caller.sub, body='{"name": ')
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")


# --- list --------------------------------------------------------------------------------------------------


def test_the_campaigns_path_lists_campaigns_and_is_not_read_as_a_lead_id():
    caller = make_caller()
    _create(caller, {"name": "Flyers"})
    response = _list(caller)
    assert response.status == 200
    assert [c["name"] for c in response.data] == ["Flyers"]
    assert response.body["nextCursor"] is None


def test_the_list_is_in_name_order_without_archived_hooks():
    caller = make_caller()
    for name in ("Zumba flyers", "Autumn ads", "Meta form 12"):
        _create(caller, {"name": name})
    make_campaign(caller.org_id, name="Old promo", archived=True)
    assert [c["name"] for c in _list(caller).data] == ["Autumn ads", "Meta form 12", "Zumba flyers"]


def test_archived_hooks_are_listed_on_request():
    caller = make_caller()
    make_campaign(caller.org_id, name="Old promo", archived=True)
    _create(caller, {"name": "Live"})
    assert [c["name"] for c in _list(caller, archived="true").data] == ["Old promo"]


def test_the_list_pages_with_a_cursor():
    caller = make_caller()
    for name in ("A", "B", "B", "C"):
        _create(caller, {"name": name})
    first = _list(caller, limit="3")
    second = _list(caller, limit="3", cursor=first.body["nextCursor"])
    assert [c["name"] for c in first.data] == ["A", "B", "B"]
    assert [c["name"] for c in second.data] == ["C"]
    assert second.body["nextCursor"] is None
    assert {c["id"] for c in first.data}.isdisjoint({c["id"] for c in second.data})


def test_a_made_up_cursor_is_a_400():
    response = _list(make_caller(), cursor="not-a-cursor")
    assert (response.status, response.error_code) == (400, "INVALID_CURSOR")


@pytest.mark.parametrize("limit", ["0", "201", "many"])
def test_a_bad_limit_is_a_400(limit):
    assert _list(make_caller(), limit=limit).status == 400


def test_the_list_shows_only_the_organizations_own_hooks():
    caller = make_caller()
    make_campaign(make_caller().org_id, name="Someone else's")
    assert _list(caller).data == []


# --- patch -------------------------------------------------------------------------------------------------


def test_a_campaign_can_be_renamed_and_recoloured():
    caller = make_caller()
    campaign = _create(caller, {"name": "Flyers", "color": "blue"}).data
    changed = _patch(caller, campaign["id"], {"name": "Flyers June", "color": None}).data
    assert (changed["name"], changed["color"]) == ("Flyers June", None)


def test_an_archived_campaign_leaves_the_list_and_comes_back_when_unarchived():
    caller = make_caller()
    campaign = _create(caller, {"name": "Flyers"}).data
    archived = _patch(caller, campaign["id"], {"archived": True}).data
    assert archived["archivedAt"] is not None
    assert _list(caller).data == []
    _patch(caller, campaign["id"], {"archived": False})
    assert [c["id"] for c in _list(caller).data] == [campaign["id"]]


def test_another_organizations_campaign_is_404_like_a_random_id():
    caller, other_org = make_caller(), make_caller().org_id
    foreign = make_campaign(other_org, name="Theirs")
    foreign_answer = _patch(caller, foreign, {"name": "Mine now"})
    random_answer = _patch(caller, uuid.uuid4(), {"name": "Mine now"})
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "CAMPAIGN_NOT_FOUND")
    assert foreign_answer.body == random_answer.body
    assert [c["name"] for c in campaigns_of(other_org)] == ["Theirs"]


def test_a_campaign_id_that_is_not_a_uuid_is_404():
    caller = make_caller()
    assert _patch(caller, "campaign-1", {"name": "X"}).error_code == "CAMPAIGN_NOT_FOUND"


@pytest.mark.parametrize("body", [{}, {"name": None}, {"archived": None}, {"name": ""}, {"channel": "x"}])
def test_a_patch_with_nothing_valid_to_change_is_a_400(body):
    caller = make_caller()
    campaign = _create(caller, {"name": "Flyers"}).data
    assert _patch(caller, campaign["id"], body).status == 400


# --- gates -------------------------------------------------------------------------------------------------


def test_a_member_who_is_not_staff_gets_403_on_every_campaign_route():
    member = make_caller(role="member")
    campaign_id = make_campaign(member.org_id)
    assert _create(member, {"name": "X"}).error_code == "STAFF_ONLY"
    assert _list(member).error_code == "STAFF_ONLY"
    assert _patch(member, campaign_id, {"name": "X"}).error_code == "STAFF_ONLY"


def test_an_outsider_gets_403_not_a_member():
    outsider = make_caller()
    org_id = make_caller().org_id
    response = call_api("GET", _path(org_id), sub=outsider.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_an_organization_without_lead_management_gets_403():
    caller = make_caller(features={})
    assert _list(caller).error_code == "FEATURE_DISABLED"


# --- find-or-create ----------------------------------------------------------------------------------------


def test_find_or_create_mints_a_hook_once_and_then_finds_it(private_engine):
    org_id = make_caller().org_id
    with private_engine.begin() as conn:
        first = campaign_service.find_or_create_campaign(conn, org_id, "facebook", "form-42", "Meta form 42")
    with private_engine.begin() as conn:
        again = campaign_service.find_or_create_campaign(conn, org_id, "facebook", "form-42", "renamed")
    assert again == first
    [hook] = campaigns_of(org_id)
    assert (hook["name"], hook["channel"], hook["external_ref"]) == ("Meta form 42", "facebook", "form-42")


def test_the_same_ref_on_another_channel_or_organization_is_another_hook(private_engine):
    org_id, other_org = make_caller().org_id, make_caller().org_id
    with private_engine.begin() as conn:
        ids = {
            campaign_service.find_or_create_campaign(conn, org_id, "facebook", "42", "A"),
            campaign_service.find_or_create_campaign(conn, org_id, "instagram", "42", "B"),
            campaign_service.find_or_create_campaign(conn, other_org, "facebook", "42", "C"),
        }
    assert len(ids) == 3


def test_concurrent_find_or_create_of_one_hook_makes_one_row(private_engine, monkeypatch):
    org_id = make_caller().org_id
    start = threading.Barrier(2, timeout=10)
    results: list = []

    def mint() -> None:
        try:
            with private_engine.connect() as conn, conn.begin():
                start.wait()
                results.append(campaign_service.find_or_create_campaign(conn, org_id, "whatsapp", "ad-7", "Ad 7"))
                time.sleep(0.3)  # hold the transaction open: the other one must wait for it, then find its row
        except BaseException as error:
            results.append(error)

    threads = [threading.Thread(target=mint) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(results) == 2 and all(isinstance(r, uuid.UUID) for r in results), results
    assert results[0] == results[1]
    assert len(campaigns_of(org_id)) == 1
