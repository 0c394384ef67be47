"""GET /organizations/{orgId}/leads: each filter lists exactly the leads it names, and only the caller's."""

from __future__ import annotations

import pytest

from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_list_helpers import (
    as_str,
    ids,
    insert_lead,
    make_board,
    make_campaign,
    make_tag,
    place,
    tag,
)


def _list(caller, query=None):
    response = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query=query)
    assert response.status == 200, response.body
    return response


def _listed(caller, query=None) -> set[str]:
    return set(ids(_list(caller, query)))


@pytest.fixture
def caller():
    return make_caller()


@pytest.fixture
def board(caller):
    return make_board(caller.org_id, "Sales", default=True)


# -- status ------------------------------------------------------------------------------------------------


def test_status_lists_only_leads_in_that_status(caller, board):
    contacted = insert_lead(board, category="contacted")
    insert_lead(board, category="new")
    assert _listed(caller, {"status": "contacted"}) == set(as_str(contacted))


def test_several_statuses_comma_separated_list_leads_in_any_of_them(caller, board):
    contacted = insert_lead(board, category="contacted")
    lost = insert_lead(board, category="lost")
    insert_lead(board, category="new")
    assert _listed(caller, {"status": "contacted,lost"}) == set(as_str(contacted, lost))


def test_several_statuses_as_repeated_parameters_list_leads_in_any_of_them(caller, board):
    contacted = insert_lead(board, category="contacted")
    lost = insert_lead(board, category="lost")
    insert_lead(board, category="new")
    assert _listed(caller, "status=contacted&status=lost") == set(as_str(contacted, lost))


# -- pipelines and stages ----------------------------------------------------------------------------------


def test_pipeline_lists_leads_whose_primary_or_a_secondary_placement_is_that_pipeline(caller, board):
    courses = make_board(caller.org_id, "Courses", ("new", "contacted", "customer", "lost"))
    primary_there = insert_lead(courses, category="contacted")
    secondary_there = insert_lead(board, category="new")
    place(courses, secondary_there, "customer")
    insert_lead(board, category="new")
    assert _listed(caller, {"pipelineId": str(courses.pipeline_id)}) == set(as_str(primary_there, secondary_there))


def test_a_lead_with_a_secondary_placement_is_listed_once_for_its_pipeline(caller, board):
    courses = make_board(caller.org_id, "Courses", ("new", "customer", "lost"))
    lead = insert_lead(board)
    place(courses, lead, "new")
    assert ids(_list(caller, {"pipelineId": str(courses.pipeline_id)})) == as_str(lead)


def test_stage_ids_with_a_pipeline_filter_on_the_effective_stage_in_that_pipeline(caller, board):
    courses = make_board(caller.org_id, "Courses", ("new", "contacted", "customer", "lost"))
    primary_customer = insert_lead(courses, category="customer")
    secondary_customer = insert_lead(board, category="new")
    place(courses, secondary_customer, "customer")
    secondary_contacted = insert_lead(board, category="contacted")
    place(courses, secondary_contacted, "contacted")
    query = {"pipelineId": str(courses.pipeline_id), "stageIds": str(courses.stages["customer"])}
    assert _listed(caller, query) == set(as_str(primary_customer, secondary_customer))


def test_stage_ids_of_the_primary_pipeline_do_not_match_a_lead_through_its_secondary_placement(caller, board):
    courses = make_board(caller.org_id, "Courses", ("new", "contacted", "customer", "lost"))
    lead = insert_lead(board, category="contacted")
    place(courses, lead, "new")
    query = {"pipelineId": str(courses.pipeline_id), "stageIds": str(board.stages["contacted"])}
    assert _listed(caller, query) == set()


def test_stage_ids_without_a_pipeline_filter_on_the_primary_stage(caller, board):
    courses = make_board(caller.org_id, "Courses", ("new", "contacted", "customer", "lost"))
    primary_customer = insert_lead(courses, category="customer")
    secondary_customer = insert_lead(board, category="new")
    place(courses, secondary_customer, "customer")
    assert _listed(caller, {"stageIds": str(courses.stages["customer"])}) == set(as_str(primary_customer))


def test_several_stage_ids_list_leads_on_any_of_them(caller, board):
    contacted = insert_lead(board, category="contacted")
    callback = insert_lead(board, category="callback")
    insert_lead(board, category="new")
    query = {"stageIds": f"{board.stages['contacted']},{board.stages['callback']}"}
    assert _listed(caller, query) == set(as_str(contacted, callback))


# -- tags and campaigns ------------------------------------------------------------------------------------


def test_tags_list_leads_having_any_of_the_tags_each_once(caller, board):
    vip, yoga = make_tag(caller.org_id, "VIP"), make_tag(caller.org_id, "Yoga")
    only_vip, only_yoga, both = insert_lead(board), insert_lead(board), insert_lead(board)
    insert_lead(board)  # untagged
    tag(caller.org_id, only_vip, vip)
    tag(caller.org_id, only_yoga, yoga)
    tag(caller.org_id, both, vip, yoga)
    listed = ids(_list(caller, {"tags": f"{vip},{yoga}"}))
    assert sorted(listed) == sorted(as_str(only_vip, only_yoga, both))


def test_list_rows_carry_their_tags(caller, board):
    vip = make_tag(caller.org_id, "VIP")
    lead = insert_lead(board)
    tag(caller.org_id, lead, vip)
    [row] = _list(caller).data
    assert row["tags"] == [{"id": str(vip), "name": "VIP", "category": "label", "color": None}]


def test_an_untagged_lead_lists_an_empty_tag_list(caller, board):
    insert_lead(board)
    assert _list(caller).data[0]["tags"] == []


def test_campaign_lists_only_leads_of_that_campaign(caller, board):
    spring, autumn = make_campaign(caller.org_id, "Spring"), make_campaign(caller.org_id, "Autumn")
    from_spring = insert_lead(board, campaign_id=spring)
    insert_lead(board, campaign_id=autumn)
    insert_lead(board)
    assert _listed(caller, {"campaignId": str(spring)}) == set(as_str(from_spring))


# -- archived ----------------------------------------------------------------------------------------------


def test_archived_leads_are_hidden_by_default(caller, board):
    live = insert_lead(board)
    insert_lead(board, archived=True)
    assert _listed(caller) == set(as_str(live))


def test_archived_false_lists_live_leads_only(caller, board):
    live = insert_lead(board)
    insert_lead(board, archived=True)
    assert _listed(caller, {"archived": "false"}) == set(as_str(live))


def test_archived_true_lists_archived_leads_only(caller, board):
    insert_lead(board)
    archived = insert_lead(board, archived=True)
    assert _listed(caller, {"archived": "true"}) == set(as_str(archived))


def test_archived_all_lists_both(caller, board):
    live, archived = insert_lead(board), insert_lead(board, archived=True)
    assert _listed(caller, {"archived": "all"}) == set(as_str(live, archived))


# -- assignee ----------------------------------------------------------------------------------------------


def test_assignee_me_lists_the_callers_own_leads(caller, board):
    colleague = make_user()
    make_membership(caller.organization, colleague, role="coach")
    mine = insert_lead(board, assigned_to=caller.user.id)
    insert_lead(board, assigned_to=colleague.id)
    insert_lead(board)
    assert _listed(caller, {"assignee": "me"}) == set(as_str(mine))


def test_assignee_me_means_whoever_calls(caller, board):
    colleague = make_caller(organization=caller.organization)
    insert_lead(board, assigned_to=caller.user.id)
    theirs = insert_lead(board, assigned_to=colleague.user.id)
    assert _listed(colleague, {"assignee": "me"}) == set(as_str(theirs))


def test_assignee_unassigned_lists_leads_without_an_owner(caller, board):
    insert_lead(board, assigned_to=caller.user.id)
    nobodys = insert_lead(board)
    assert _listed(caller, {"assignee": "unassigned"}) == set(as_str(nobodys))


def test_assignee_a_user_id_lists_that_users_leads(caller, board):
    colleague = make_caller(organization=caller.organization)
    insert_lead(board, assigned_to=caller.user.id)
    theirs = insert_lead(board, assigned_to=colleague.user.id)
    assert _listed(caller, {"assignee": str(colleague.user.id)}) == set(as_str(theirs))


def test_assignee_other_than_me_unassigned_or_a_user_id_is_refused_with_400(caller, board):
    response = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query={"assignee": "someone"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


# -- test enquiries ----------------------------------------------------------------------------------------


def test_test_leads_are_listed_with_their_flag_by_default(caller, board):
    test_lead = insert_lead(board, is_test=True)
    real = insert_lead(board)
    flags = {row["id"]: row["isTest"] for row in _list(caller).data}
    assert flags == {str(test_lead): True, str(real): False}


def test_is_test_false_hides_test_leads(caller, board):
    insert_lead(board, is_test=True)
    real = insert_lead(board)
    assert _listed(caller, {"isTest": "false"}) == set(as_str(real))


def test_is_test_true_lists_only_test_leads(caller, board):
    test_lead = insert_lead(board, is_test=True)
    insert_lead(board)
    assert _listed(caller, {"isTest": "true"}) == set(as_str(test_lead))


# -- search ------------------------------------------------------------------------------------------------


def test_search_matches_part_of_the_name_whatever_the_case(caller, board):
    ada = insert_lead(board, name="Ada Lovelace")
    insert_lead(board, name="Grace Hopper")
    assert _listed(caller, {"search": "LOVEL"}) == set(as_str(ada))


def test_search_matches_part_of_the_email_whatever_the_case(caller, board):
    dana = insert_lead(board, name="D.", email="dana.cohen@studio.test")
    insert_lead(board, name="Other", email="other@studio.test")
    assert _listed(caller, {"search": "Cohen@Stu"}) == set(as_str(dana))


def test_search_matches_the_phone_by_its_digits_however_it_was_typed(caller, board):
    dana = insert_lead(board, name="Dana", phone="050-123 4567")
    insert_lead(board, name="Noa", phone="052-999 8888")
    assert _listed(caller, {"search": "(050) 1234"}) == set(as_str(dana))


def test_search_with_a_trunk_zero_finds_a_phone_stored_in_international_form(caller, board):
    dana = insert_lead(board, name="Dana", phone="+972 50 123 4567")
    insert_lead(board, name="Noa", phone="+972 52 999 8888")
    assert _listed(caller, {"search": "050-1234567"}) == set(as_str(dana))


def test_search_with_fewer_than_3_digits_does_not_match_phones(caller, board):
    insert_lead(board, name="Dana", phone="050-123 4567")
    assert _listed(caller, {"search": "50"}) == set()


def test_search_wildcards_are_matched_literally(caller, board):
    discount = insert_lead(board, name="Promo 100% off")
    insert_lead(board, name="Promo 1000 off")
    assert _listed(caller, {"search": "100%"}) == set(as_str(discount))


def test_search_underscore_is_matched_literally(caller, board):
    underscored = insert_lead(board, name="x", email="a_b@studio.test")
    insert_lead(board, name="y", email="axb@studio.test")
    assert _listed(caller, {"search": "a_b"}) == set(as_str(underscored))


def test_search_is_trimmed(caller, board):
    ada = insert_lead(board, name="Ada Lovelace")
    assert _listed(caller, {"search": "  ada  "}) == set(as_str(ada))


# -- combined, and organizations ---------------------------------------------------------------------------


def test_filters_combine_with_and(caller, board):
    vip = make_tag(caller.org_id, "VIP")
    match = insert_lead(board, name="Ada", category="contacted", assigned_to=caller.user.id)
    tag(caller.org_id, match, vip)
    tagged_other_status = insert_lead(board, name="Ada", category="new", assigned_to=caller.user.id)
    tag(caller.org_id, tagged_other_status, vip)
    insert_lead(board, name="Ada", category="contacted", assigned_to=caller.user.id)  # untagged
    query = {"status": "contacted", "tags": str(vip), "assignee": "me", "search": "ada"}
    assert _listed(caller, query) == set(as_str(match))


def test_no_filter_ever_lists_another_organizations_leads(caller, board):
    stranger = make_caller()
    their_board = make_board(stranger.org_id, "Sales")
    their_tag = make_tag(stranger.org_id, "VIP")
    theirs = insert_lead(their_board, name="Ada", category="contacted", assigned_to=stranger.user.id)
    tag(stranger.org_id, theirs, their_tag)
    insert_lead(board, name="Mine")
    for query in (
        None,
        {"pipelineId": str(their_board.pipeline_id)},
        {"stageIds": str(their_board.stages["contacted"])},
        {"tags": str(their_tag)},
        {"search": "ada"},
        {"archived": "all"},
    ):
        assert str(theirs) not in _listed(caller, query), query


def test_another_organizations_pipeline_tag_or_campaign_id_lists_nothing(caller, board):
    stranger = make_caller()
    insert_lead(board)
    assert _listed(caller, {"pipelineId": str(make_board(stranger.org_id).pipeline_id)}) == set()
    assert _listed(caller, {"tags": str(make_tag(stranger.org_id, "VIP"))}) == set()
    assert _listed(caller, {"campaignId": str(make_campaign(stranger.org_id))}) == set()


def test_a_caller_who_is_not_a_member_gets_403_not_the_list(caller, board):
    insert_lead(board)
    outsider = make_caller()
    response = call_api("GET", leads_path(caller.org_id), sub=outsider.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_a_member_without_a_staff_role_gets_403(caller, board):
    member = make_caller(organization=caller.organization, role="member")
    response = call_api("GET", leads_path(caller.org_id), sub=member.sub)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_a_placement_in_the_pipeline_wins_over_the_primary_stage_there(caller, board):
    """coalesce(placement.stage_id, primary stage): should a lead ever hold both, it is listed once, on the
    placement's stage."""
    lead = insert_lead(board, category="contacted")
    place(board, lead, "callback")
    on_callback = {"pipelineId": str(board.pipeline_id), "stageIds": str(board.stages["callback"])}
    on_contacted = {"pipelineId": str(board.pipeline_id), "stageIds": str(board.stages["contacted"])}
    assert ids(_list(caller, on_callback)) == as_str(lead)
    assert ids(_list(caller, on_contacted)) == []
    assert ids(_list(caller, {"pipelineId": str(board.pipeline_id)})) == as_str(lead)
