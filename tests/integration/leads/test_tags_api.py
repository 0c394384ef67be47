"""Tags (staff): CRUD of the organization's tags, replacing a lead's tags (timeline entries tag_added /
tag_removed), and `attach_tag` for other areas; gates, 404s, 409 TAG_EXISTS, bad input."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from leadcrm.leads import tags as tag_service
from leadcrm.leads.tables import lead_tag_assignments, leads
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import activities_of
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes `lead.created`; the bus exists."""


def _tags_path(org_id, tag_id=None) -> str:
    base = f"/organizations/{org_id}/leads/tags"
    return base if tag_id is None else f"{base}/{tag_id}"


def _create_tag(caller, name="VIP", **extra):
    return call_api("POST", _tags_path(caller.org_id), sub=caller.sub, body={"name": name, **extra})


def _list(caller, **query):
    return call_api("GET", _tags_path(caller.org_id), sub=caller.sub, query=query or None)


def _patch(caller, tag_id, body):
    return call_api("PATCH", _tags_path(caller.org_id, tag_id), sub=caller.sub, body=body)


def _delete(caller, tag_id):
    return call_api("DELETE", _tags_path(caller.org_id, tag_id), sub=caller.sub)


def _lead(caller, name="Ada") -> str:
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": name}).data["id"]


def _put_tags(caller, lead_id, tag_ids):
    return call_api(
        "PUT", f"{leads_path(caller.org_id, lead_id)}/tags", sub=caller.sub, body={"tagIds": [str(t) for t in tag_ids]}
    )


def _assigned(lead_id) -> set[uuid.UUID]:
    with get_engine().connect() as conn:
        return set(
            conn.execute(
                select(lead_tag_assignments.c.tag_id).where(lead_tag_assignments.c.lead_id == uuid.UUID(str(lead_id)))
            ).scalars()
        )


# --- the organization's tags -------------------------------------------------------------------------------


def test_staff_create_a_label_tag_by_default_with_201():
    response = _create_tag(make_caller(), "VIP", color="#aa0000")
    assert response.status == 201
    assert (response.data["name"], response.data["category"], response.data["color"]) == ("VIP", "label", "#aa0000")


def test_a_purchase_tag_can_be_created():
    assert _create_tag(make_caller(), "Yoga course", category="purchase").data["category"] == "purchase"


def test_the_same_name_in_the_same_category_is_a_409_tag_exists_whatever_the_case():
    caller = make_caller()
    _create_tag(caller, "VIP")
    response = _create_tag(caller, "vip")
    assert (response.status, response.error_code) == (409, "TAG_EXISTS")


def test_the_same_name_in_the_other_category_is_another_tag():
    caller = make_caller()
    _create_tag(caller, "Yoga")
    assert _create_tag(caller, "Yoga", category="purchase").status == 201


def test_the_same_name_in_another_organization_is_fine():
    _create_tag(make_caller(), "VIP")
    assert _create_tag(make_caller(), "VIP").status == 201


def test_the_tags_path_lists_tags_by_category_then_name_and_is_not_read_as_a_lead_id():
    caller = make_caller()
    for name, category in (("zeta", "label"), ("Alpha", "label"), ("Course B", "purchase")):
        _create_tag(caller, name, category=category)
    response = _list(caller)
    assert response.status == 200
    assert [(t["category"], t["name"]) for t in response.data] == [
        ("label", "Alpha"),
        ("label", "zeta"),
        ("purchase", "Course B"),
    ]
    assert response.body["nextCursor"] is None


def test_the_list_filters_by_category():
    caller = make_caller()
    _create_tag(caller, "VIP")
    _create_tag(caller, "Course", category="purchase")
    assert [t["name"] for t in _list(caller, category="purchase").data] == ["Course"]


def test_the_list_pages_with_a_cursor():
    caller = make_caller()
    for name in ("a", "B", "c"):
        _create_tag(caller, name)
    first = _list(caller, limit="2")
    second = _list(caller, limit="2", cursor=first.body["nextCursor"])
    assert [t["name"] for t in first.data + second.data] == ["a", "B", "c"]
    assert second.body["nextCursor"] is None


def test_the_list_shows_only_the_organizations_own_tags():
    _create_tag(make_caller(), "Theirs")
    assert _list(make_caller()).data == []


def test_a_tag_can_be_renamed_and_recoloured():
    caller = make_caller()
    tag = _create_tag(caller, "VIP", color="red").data
    changed = _patch(caller, tag["id"], {"name": "Very important", "color": None}).data
    assert (changed["name"], changed["color"], changed["category"]) == ("Very important", None, "label")


def test_renaming_onto_a_taken_name_is_a_409_tag_exists():
    caller = make_caller()
    _create_tag(caller, "VIP")
    other = _create_tag(caller, "Hot").data
    response = _patch(caller, other["id"], {"name": "vip"})
    assert (response.status, response.error_code) == (409, "TAG_EXISTS")
    assert [t["name"] for t in _list(caller).data] == ["Hot", "VIP"]


def test_a_tag_keeps_its_category():
    caller = make_caller()
    tag = _create_tag(caller, "VIP").data
    assert _patch(caller, tag["id"], {"category": "purchase"}).status == 400


def test_another_organizations_tag_is_404_like_a_random_id_on_patch_and_delete():
    caller, other = make_caller(), make_caller()
    foreign = _create_tag(other, "Theirs").data["id"]
    for call in (lambda t: _patch(caller, t, {"name": "Mine"}), lambda t: _delete(caller, t)):
        foreign_answer, random_answer = call(foreign), call(uuid.uuid4())
        assert (foreign_answer.status, foreign_answer.error_code) == (404, "TAG_NOT_FOUND")
        assert foreign_answer.body == random_answer.body
    assert [t["name"] for t in _list(other).data] == ["Theirs"]


def test_a_tag_id_that_is_not_a_uuid_is_404():
    assert _delete(make_caller(), "vip").error_code == "TAG_NOT_FOUND"


def test_deleting_a_tag_takes_it_off_every_lead_with_a_timeline_entry():
    caller = make_caller()
    tag = _create_tag(caller, "VIP").data
    lead_id = _lead(caller)
    _put_tags(caller, lead_id, [tag["id"]])
    response = _delete(caller, tag["id"])
    assert response.status == 204
    assert _assigned(lead_id) == set()
    assert _list(caller).data == []
    [removed] = activities_of(lead_id, "tag_removed")
    assert removed["payload"]["name"] == "VIP"
    assert removed["actor_user_id"] == caller.user.id


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x" * 101},
        {"name": "VIP", "category": "segment"},
        {"name": "VIP", "color": "#12"},
        {"name": "VIP", "extra": True},
    ],
    ids=["empty", "blank", "long", "bad-category", "bad-color", "unknown-field"],
)
def test_bad_tag_input_is_a_400(body):
    caller = make_caller()
    response = call_api("POST", _tags_path(caller.org_id), sub=caller.sub, body=body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


# --- a lead's tags -----------------------------------------------------------------------------------------


def test_putting_tags_on_a_lead_replaces_its_set_and_answers_the_tags_now():
    caller = make_caller()
    vip, hot, cold = (_create_tag(caller, n).data["id"] for n in ("VIP", "Hot", "Cold"))
    lead_id = _lead(caller)
    _put_tags(caller, lead_id, [vip, hot])
    response = _put_tags(caller, lead_id, [hot, cold])
    assert response.status == 200
    assert [t["name"] for t in response.data] == ["Cold", "Hot"]
    assert _assigned(lead_id) == {uuid.UUID(hot), uuid.UUID(cold)}


def test_each_change_of_a_leads_tags_is_on_its_timeline():
    caller = make_caller()
    vip, hot = (_create_tag(caller, n).data["id"] for n in ("VIP", "Hot"))
    lead_id = _lead(caller)
    _put_tags(caller, lead_id, [vip])
    _put_tags(caller, lead_id, [hot])
    added = [(e["payload"]["tagId"], e["actor_user_id"]) for e in activities_of(lead_id, "tag_added")]
    removed = [e["payload"]["tagId"] for e in activities_of(lead_id, "tag_removed")]
    assert sorted(added) == sorted([(vip, caller.user.id), (hot, caller.user.id)])
    assert removed == [vip]


def test_putting_the_same_tags_again_changes_and_records_nothing():
    caller = make_caller()
    vip = _create_tag(caller, "VIP").data["id"]
    lead_id = _lead(caller)
    _put_tags(caller, lead_id, [vip])
    _put_tags(caller, lead_id, [vip, vip])
    assert len(activities_of(lead_id, "tag_added")) == 1


def test_an_empty_list_takes_every_tag_off():
    caller = make_caller()
    vip = _create_tag(caller, "VIP").data["id"]
    lead_id = _lead(caller)
    _put_tags(caller, lead_id, [vip])
    assert _put_tags(caller, lead_id, []).data == []
    assert _assigned(lead_id) == set()


def test_a_tag_change_touches_the_leads_updated_at():
    caller = make_caller()
    vip = _create_tag(caller, "VIP").data["id"]
    lead_id = _lead(caller)
    with get_engine().connect() as conn:
        before = conn.execute(select(leads.c.updated_at).where(leads.c.id == uuid.UUID(lead_id))).scalar_one()
    _put_tags(caller, lead_id, [vip])
    with get_engine().connect() as conn:
        after = conn.execute(select(leads.c.updated_at).where(leads.c.id == uuid.UUID(lead_id))).scalar_one()
    assert after > before


def test_another_organizations_tag_is_refused_like_a_random_one_and_nothing_changes():
    caller, other = make_caller(), make_caller()
    mine = _create_tag(caller, "VIP").data["id"]
    foreign = _create_tag(other, "Theirs").data["id"]
    lead_id = _lead(caller)
    response = _put_tags(caller, lead_id, [mine, foreign])
    assert (response.status, response.error_code) == (400, "TAG_NOT_FOUND")
    assert response.body["error"]["unknownTagIds"] == [foreign]
    random_id = str(uuid.uuid4())
    random_answer = _put_tags(caller, lead_id, [mine, random_id])
    assert random_answer.body["error"]["unknownTagIds"] == [random_id]
    assert _assigned(lead_id) == set()


def test_another_organizations_lead_is_404_like_a_random_one():
    caller, other = make_caller(), make_caller()
    foreign_lead = _lead(other)
    foreign_answer = _put_tags(caller, foreign_lead, [])
    random_answer = _put_tags(caller, uuid.uuid4(), [])
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "LEAD_NOT_FOUND")
    assert foreign_answer.body == random_answer.body


@pytest.mark.parametrize(
    "body",
    [{}, {"tagIds": "VIP"}, {"tagIds": ["not-a-uuid"]}, {"tagIds": [str(uuid.uuid4())] * 201}, {"tagIds": [], "x": 1}],
    ids=["empty", "string", "bad-id", "too-many", "unknown-field"],
)
def test_bad_lead_tags_input_is_a_400(body):
    caller = make_caller()
    lead_id = _lead(caller)
    response = call_api("PUT", f"{leads_path(caller.org_id, lead_id)}/tags", sub=caller.sub, body=body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


# --- gates -------------------------------------------------------------------------------------------------


def test_a_member_who_is_not_staff_gets_403_on_every_tag_route():
    owner = make_caller(role="owner")
    member = make_caller(role="member", organization=owner.organization)
    tag = _create_tag(owner, "VIP").data["id"]
    lead_id = _lead(owner)
    for response in (
        _create_tag(member, "X"),
        _list(member),
        _patch(member, tag, {"name": "Y"}),
        _delete(member, tag),
        _put_tags(member, lead_id, [tag]),
    ):
        assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_an_outsider_gets_403_not_a_member():
    org_id = make_caller().org_id
    response = call_api("GET", _tags_path(org_id), sub=make_caller().sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


# --- attach_tag and find_or_create_tag (for other areas) ---------------------------------------------------


def test_attach_tag_puts_a_tag_on_once_with_a_timeline_entry(private_engine):
    caller = make_caller()
    lead_id = uuid.UUID(_lead(caller))
    with private_engine.begin() as conn:
        tag_id = tag_service.find_or_create_tag(conn, caller.org_id, "Yoga course", "purchase")
        assert tag_service.attach_tag(conn, caller.org_id, lead_id, tag_id) is True
    with private_engine.begin() as conn:
        assert tag_service.attach_tag(conn, caller.org_id, lead_id, tag_id) is False
    assert _assigned(lead_id) == {tag_id}
    [entry] = activities_of(lead_id, "tag_added")
    assert entry["payload"] == {"tagId": str(tag_id), "name": "Yoga course", "category": "purchase"}


def test_find_or_create_tag_finds_the_existing_tag_whatever_the_case(private_engine):
    caller = make_caller()
    existing = _create_tag(caller, "Yoga Course", category="purchase").data["id"]
    with private_engine.begin() as conn:
        found = tag_service.find_or_create_tag(conn, caller.org_id, "yoga course", "purchase")
    assert str(found) == existing


def test_attach_tag_refuses_to_cross_organizations(private_engine):
    caller, other = make_caller(), make_caller()
    lead_id = uuid.UUID(_lead(caller))
    foreign_tag = uuid.UUID(_create_tag(other, "Theirs").data["id"])
    with private_engine.begin() as conn:
        assert tag_service.attach_tag(conn, caller.org_id, lead_id, foreign_tag) is False
        assert tag_service.attach_tag(conn, other.org_id, lead_id, foreign_tag) is False
    assert _assigned(lead_id) == set()
