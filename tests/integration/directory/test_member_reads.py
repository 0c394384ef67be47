"""Reads that carry the membership check in their own statement (leadcrm.directory.member_reads) refuse exactly
as resolve_actor does, in the same order: 403 NOT_A_MEMBER for anyone who is not an active member, then the
route's gate, then the request's own rules (400, 404). The lead detail, the lead list and its search, the task
list and the pipelines use it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, update

from leadcrm.directory.access import require_staff
from leadcrm.directory.member_reads import CALLER, data_column, member_statement, read_as_member
from leadcrm.directory.tables import organizations
from leadcrm.leads.tables import leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.errors import Forbidden
from tests.support.api import call_api, leads_path
from tests.support.database import count_statements
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_list_helpers import insert_lead, make_board

MISSING_LEAD = "01890000-0000-7000-8000-00000000abcd"


@pytest.fixture(scope="module")
def lead():
    """An organization's lead, and its owner."""
    owner = make_caller(role="owner")
    return owner, insert_lead(make_board(owner.org_id, default=True), name="Ada Lovelace")


def _read_routes(org_id, lead_id):
    return {
        "detail": (leads_path(org_id, lead_id), None),
        "list": (leads_path(org_id), None),
        "search": (leads_path(org_id), {"search": "ada"}),
        "tasks": (f"/organizations/{org_id}/tasks", None),
        "pipelines": (f"/organizations/{org_id}/pipelines", None),
    }


READS = ("detail", "list", "search", "tasks", "pipelines")


def _get(org_id, lead_id, read, sub):
    path, query = _read_routes(org_id, lead_id)[read]
    return call_api("GET", path, sub=sub, query=query)


@pytest.mark.parametrize("read", READS)
def test_the_owner_reads(lead, read):
    owner, lead_id = lead
    response = _get(owner.org_id, lead_id, read, owner.sub)
    assert response.status == 200, response.body


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize(
    "membership",
    [{"status": "suspended"}, {"status": "pending_invitation"}, {"status": "cancelled"}, {"deleted": True}],
)
def test_a_membership_that_is_not_active_is_not_a_member(lead, read, membership):
    owner, lead_id = lead
    user = make_user()
    make_membership(owner.org_id, user, role="owner", **membership)
    response = _get(owner.org_id, lead_id, read, user.auth_subject)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


@pytest.mark.parametrize("read", READS)
def test_an_owner_of_another_organization_is_not_a_member(lead, read):
    owner, lead_id = lead
    stranger = make_caller(role="owner")
    response = _get(owner.org_id, lead_id, read, stranger.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


@pytest.mark.parametrize("read", READS)
def test_a_subject_that_maps_to_no_user_is_not_a_member(lead, read):
    owner, lead_id = lead
    response = _get(owner.org_id, lead_id, read, f"user_{uuid.uuid4().hex}")
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


@pytest.mark.parametrize("read", READS)
def test_an_organization_the_platform_deleted_has_no_members(read):
    owner = make_caller(role="owner")
    lead_id = insert_lead(make_board(owner.org_id, default=True), name="Ada Lovelace")
    with get_engine().begin() as conn:
        conn.execute(
            update(organizations).where(organizations.c.id == owner.org_id).values(deleted_at=datetime.now(UTC))
        )
    response = _get(owner.org_id, lead_id, read, owner.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


@pytest.mark.parametrize("read", READS)
def test_an_organization_id_that_is_not_an_id_is_not_one_you_belong_to(lead, read):
    owner, lead_id = lead
    response = _get("not-an-id", lead_id, read, owner.sub)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


@pytest.mark.parametrize("read", READS)
def test_a_member_who_is_not_staff_gets_staff_only(lead, read):
    owner, lead_id = lead
    member = make_caller(role="member", organization=owner.organization)
    response = _get(owner.org_id, lead_id, read, member.sub)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


@pytest.mark.parametrize("read", READS)
def test_an_organization_without_lead_management_gets_feature_disabled(read):
    owner = make_caller(role="owner", features={"lead_management": False})
    response = _get(owner.org_id, MISSING_LEAD, read, owner.sub)
    assert (response.status, response.error_code) == (403, "FEATURE_DISABLED")


def test_a_lead_the_organization_does_not_have_is_not_found(lead):
    owner, _ = lead
    response = call_api("GET", leads_path(owner.org_id, MISSING_LEAD), sub=owner.sub)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_another_organizations_lead_is_not_found(lead):
    _, lead_id = lead
    stranger = make_caller(role="owner")
    response = call_api("GET", leads_path(stranger.org_id, lead_id), sub=stranger.sub)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_a_lead_id_that_is_not_an_id_is_refused_by_the_gate_before_the_404(lead):
    owner, _ = lead
    member = make_caller(role="member", organization=owner.organization)
    assert call_api("GET", leads_path(owner.org_id, "nope"), sub=owner.sub).error_code == "LEAD_NOT_FOUND"
    response = call_api("GET", leads_path(owner.org_id, "nope"), sub=member.sub)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


@pytest.mark.parametrize(
    ("list_path", "query"),
    [("leads", {"search": " x "}), ("leads", {"cursor": "not-a-cursor"}), ("tasks", {"cursor": "not-a-cursor"})],
)
def test_a_list_rule_is_applied_after_the_gate(lead, list_path, query):
    owner, _ = lead
    member = make_caller(role="member", organization=owner.organization)
    path = f"/organizations/{owner.org_id}/{list_path}"
    assert call_api("GET", path, sub=owner.sub, query=query).status == 400
    response = call_api("GET", path, sub=member.sub, query=query)
    assert (response.status, response.error_code) == (403, "STAFF_ONLY")


def test_assignee_me_is_the_caller_the_statement_reads():
    owner = make_caller(role="owner")
    coach = make_caller(role="coach", organization=owner.organization)
    board = make_board(owner.org_id, default=True)
    mine = insert_lead(board, name="Mine", assigned_to=coach.user.id)
    insert_lead(board, name="The owner's", assigned_to=owner.user.id)
    insert_lead(board, name="Nobody's")
    response = call_api("GET", leads_path(owner.org_id), sub=coach.sub, query={"assignee": "me"})
    assert [row["id"] for row in response.data] == [str(mine)]


# -- the phone region the search guesses ------------------------------------------------------------------
RUSSIAN_NATIONAL = "8 912 345-67-89"  # in RU: the national form of +7 912 345-67-89


def _set_country(org_id, country_code):
    with get_engine().begin() as conn:
        conn.execute(update(organizations).where(organizations.c.id == org_id).values(country_code=country_code))


def _search(caller, term):
    with count_statements(get_engine()) as sent:
        response = call_api("GET", leads_path(caller.org_id), sub=caller.sub, query={"search": term})
    assert response.status == 200, response.body
    return [row["name"] for row in response.data], len(sent)


def test_a_phone_search_reads_national_numbers_in_the_region_on_the_first_search_too():
    owner = make_caller(role="owner")
    _set_country(owner.org_id, "RU")
    insert_lead(make_board(owner.org_id, default=True), name="Ivan", phone="+79123456789")
    names, statements = _search(owner, RUSSIAN_NATIONAL)  # nothing seen of this organization yet: a guess
    assert names == ["Ivan"]
    assert statements <= 2


def test_once_the_region_is_known_a_phone_search_is_one_statement():
    owner = make_caller(role="owner")
    _set_country(owner.org_id, "RU")
    insert_lead(make_board(owner.org_id, default=True), name="Ivan", phone="+79123456789")
    _search(owner, RUSSIAN_NATIONAL)
    assert _search(owner, RUSSIAN_NATIONAL) == (["Ivan"], 1)


def test_a_changed_country_applies_to_the_next_search():
    owner = make_caller(role="owner")
    _set_country(owner.org_id, "RU")
    insert_lead(make_board(owner.org_id, default=True), name="Ivan", phone="+79123456789")
    assert _search(owner, RUSSIAN_NATIONAL)[0] == ["Ivan"]
    _set_country(owner.org_id, "GB")  # "8 912…" is no Russian number in GB
    assert _search(owner, RUSSIAN_NATIONAL)[0] == []


# -- the mechanism itself ---------------------------------------------------------------------------------


def _names_of_leads(org_id):
    """A read of the organization's lead names, by name; it uses the caller's row, as a read may."""
    return (
        select(leads.c.name, CALLER.c.caller_role.label("seen_role"))
        .where(leads.c.organization_id == org_id)
        .order_by(leads.c.name)
    )


def _run(caller_sub, org_id, data, gate=require_staff):
    with get_engine().connect() as conn:
        return read_as_member(
            conn,
            member_statement(data, order_by=[data_column("name")]),
            auth_subject=caller_sub,
            organization_id=org_id,
            gate=gate,
        )


def test_a_member_read_answers_the_actor_and_the_rows_without_the_callers_columns():
    owner = make_caller(role="owner")
    board = make_board(owner.org_id, default=True)
    for name in ("Cleo", "Ada", "Bea"):
        insert_lead(board, name=name)
    read = _run(owner.sub, owner.org_id, _names_of_leads(owner.org_id))
    assert (read.actor.user_id, read.actor.role, read.actor.membership_id) == (
        owner.user.id,
        "owner",
        owner.membership.id,
    )
    assert read.rows == [{"name": n, "seen_role": "owner"} for n in ("Ada", "Bea", "Cleo")]


def test_a_member_read_that_finds_nothing_answers_the_actor_and_no_rows():
    owner = make_caller(role="owner")
    read = _run(owner.sub, owner.org_id, _names_of_leads(owner.org_id))
    assert read.actor.user_id == owner.user.id
    assert read.rows == []


def test_an_outsider_is_refused_even_where_the_read_would_find_rows():
    owner = make_caller(role="owner")
    insert_lead(make_board(owner.org_id, default=True), name="Ada")
    stranger = make_caller(role="owner")
    with pytest.raises(Forbidden) as refused:
        _run(stranger.sub, owner.org_id, _names_of_leads(owner.org_id))
    assert refused.value.code == "NOT_A_MEMBER"


def test_the_gate_judges_the_member_before_any_row_is_answered():
    owner = make_caller(role="owner")
    member = make_caller(role="member", organization=owner.organization)
    insert_lead(make_board(owner.org_id, default=True), name="Ada")
    with pytest.raises(Forbidden) as refused:
        _run(member.sub, owner.org_id, _names_of_leads(owner.org_id))
    assert refused.value.code == "STAFF_ONLY"


def test_a_member_read_is_one_statement():
    owner = make_caller(role="owner")
    with count_statements(get_engine()) as sent:
        _run(owner.sub, owner.org_id, _names_of_leads(owner.org_id))
    assert len(sent) == 1


def test_an_organization_that_does_not_exist_has_no_members():
    owner = make_caller(role="owner")
    with pytest.raises(Forbidden) as refused:
        _run(owner.sub, uuid.uuid4(), _names_of_leads(owner.org_id))
    assert refused.value.code == "NOT_A_MEMBER"


def test_a_read_may_not_select_a_column_the_callers_row_would_hide():
    with pytest.raises(ValueError, match="caller_role"):
        member_statement(select(leads.c.name.label("caller_role")))
