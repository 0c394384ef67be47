"""Every route, called as every kind of caller, on the organization's own ids and on another's.

Callers: the organization's owner, admin, coach and member; the owner of another organization; a user with
no membership; no token. The JWT authorizer refuses a request without a token before Lambda runs (401; see
test_the_gateway_refuses_every_authorized_route_without_a_token); the handler refuses one that reaches it
without claims (401) too. A refused caller gets 403 whatever the ids (no existence leak), a permitted caller
gets the row's answer, and another organization's ids answer like random ids and change nothing of it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from tests.reliability.route_table import MANAGER, MEMBER, PUBLIC, ROUTES, STAFF, Gate, Req, Row
from tests.support.api import ApiResponse, invoke
from tests.support.capture_helpers import fresh_ip
from tests.support.events import http_api_event
from tests.support.factories import make_user
from tests.support.reliability_helpers import (
    OrgWorld,
    app_routes,
    make_world,
    openapi_routes,
    org_fingerprint,
    run_with_fingerprint,
)

CALLERS = ("owner", "admin", "coach", "member", "other_org_owner", "no_membership", "no_token")
PERMITTED: dict[Gate, frozenset[str]] = {
    PUBLIC: frozenset(CALLERS),
    MEMBER: frozenset({"owner", "admin", "coach", "member"}),
    STAFF: frozenset({"owner", "admin", "coach"}),
    MANAGER: frozenset({"owner", "admin"}),
}
REFUSAL_CODE = {STAFF: "STAFF_ONLY", MANAGER: "OWNER_OR_ADMIN_ONLY"}


@dataclass(frozen=True)
class Cell:
    caller: str
    ids: str  # "own" or "foreign"


def expected(row: Row, cell: Cell) -> tuple[int, str | None]:
    """(status, error code) the cell must answer; None: any code (a success has none)."""
    if cell.caller not in PERMITTED[row.gate]:
        if cell.caller == "no_token":
            return 401, "UNAUTHENTICATED"
        if cell.caller in ("other_org_owner", "no_membership"):
            return 403, "NOT_A_MEMBER"
        return 403, REFUSAL_CODE[row.gate]
    for key in (f"{cell.caller}/{cell.ids}", cell.caller):
        if key in row.callers:
            return row.callers[key]
    if cell.ids == "foreign" and row.foreign is not None:
        return row.foreign, None
    return row.ok, None


@pytest.fixture(scope="module")
def worlds() -> tuple[OrgWorld, OrgWorld, str]:
    """Ours, theirs, and the subject of a user with no membership anywhere."""
    loner = make_user()
    assert loner.auth_subject is not None
    return make_world("Ours"), make_world("Theirs"), loner.auth_subject


@pytest.fixture(autouse=True)
def aws(shared_route_stack):
    """Every cell runs against what the routes use (tests/reliability/conftest.py), one moto for the module:
    ~2,000 cells, and a moto per route cost more than the cells themselves."""


def _call(key: str, ours: OrgWorld, request: Req, subject: str | None) -> ApiResponse:
    method, template = key.split(" ", 1)
    path = template.format(orgId=ours.id, **request.path)
    event = http_api_event(
        method,
        path,
        sub=subject,
        body=request.body,
        query=request.query,
        headers=request.headers,
        authorizer=subject is not None,
    )
    if subject is None:
        event["headers"].pop("authorization", None)
    event["requestContext"]["http"]["sourceIp"] = fresh_ip()  # public capture throttles per client address
    return invoke(event)


def _subject(caller: str, ours: OrgWorld, theirs: OrgWorld, loner: str) -> str | None:
    if caller == "no_token":
        return None
    if caller == "other_org_owner":
        return theirs.owner
    if caller == "no_membership":
        return loner
    return ours.subjects[caller]


@pytest.mark.parametrize("key", sorted(ROUTES))
def test_each_caller_gets_the_expected_answer_on_own_and_foreign_ids(key, worlds):
    ours, theirs, loner = worlds
    row = ROUTES[key]
    wrong: list[str] = []
    # A call expected to be refused, or to reach another organization, must change nothing: only those need
    # the digest (an expected success that is refused already fails on its status). Expected refusals change
    # nothing, so they share one request per organization (each expected success gets a fresh one), and a
    # digest taken after a call is the digest before the next, until a success may have changed it.
    unchanged_requests: dict[str, Req] = {}
    digests: dict[str, str] = {}
    for caller in CALLERS:
        for ids in ("own", "foreign"):
            cell = Cell(caller, ids)
            target = ours if ids == "own" else theirs
            status, code = expected(row, cell)
            must_not_change = (ids == "foreign" and row.gate is not PUBLIC) or not 200 <= status < 300
            if not 200 <= status < 300 and ids in unchanged_requests:
                request = unchanged_requests[ids]
            else:
                # Building a request writes the rows it names (a bulk route's fresh leads) into the target: a
                # digest taken before that no longer describes the organization as the call finds it.
                request = row.request(target)
                digests.pop(ids, None)
                if not 200 <= status < 300:
                    unchanged_requests[ids] = request
            if must_not_change:
                before = digests.get(ids) or org_fingerprint(target.id)
            response = _call(key, ours, request, _subject(caller, ours, theirs, loner))
            got = (response.status, response.error_code)
            label = f"{caller:>16} / {ids:<7}"
            if response.status != status or (code is not None and response.error_code != code):
                wrong.append(f"{label}: expected {status} {code or ''}, got {got} {str(response.body)[:160]}")
            if 200 <= status < 300:
                digests.pop("own", None)  # a success with or without ids may change ours
            if must_not_change:
                digests[ids] = org_fingerprint(target.id)
                if digests[ids] != before:
                    wrong.append(f"{label}: answered {got} but changed {target.organization.name}")
            else:
                digests.pop(ids, None)
    assert not wrong, f"{key}:\n" + "\n".join(wrong)


def test_every_route_has_a_row():
    served = app_routes() - {"GET /openapi.json"}
    assert served - set(ROUTES) == set(), "routes without a row in tests/reliability/route_table.py"
    assert set(ROUTES) - served == set(), "rows for routes the API does not serve"


def test_every_served_route_is_in_the_openapi_document():
    assert app_routes() - {"GET /openapi.json"} == openapi_routes()


def test_an_unknown_organization_is_refused_like_one_you_do_not_belong_to(worlds):
    ours, _, _ = worlds
    response = invoke(http_api_event("GET", f"/organizations/{uuid.uuid4()}/leads", sub=ours.owner))
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_another_organizations_ticket_is_not_found_to_assign(worlds):
    """The assign row's foreign column names their agent (refused first); with one of ours, their ticket is 404."""
    ours, theirs, _ = worlds
    ticket_id = theirs.ticket()
    body = {"assigneeUserId": str(ours.user_ids["coach"])}
    response, unchanged = run_with_fingerprint(
        theirs.id,
        lambda: invoke(
            http_api_event("POST", f"/organizations/{ours.id}/tickets/{ticket_id}/assign", sub=ours.owner, body=body)
        ),
    )
    assert (response.status, response.error_code, unchanged) == (404, "TICKET_NOT_FOUND", True)


def test_a_refused_caller_gets_403_whatever_the_path_says(worlds):
    """Path parameters are judged after the gate, as ids are: an unknown consent channel is no exception."""
    ours, _, _ = worlds
    lead_id = ours.lead()
    body = {"status": "granted", "legalBasis": "consent"}
    path = f"/organizations/{ours.id}/leads/{lead_id}/consent/carrier-pigeon"
    member = invoke(http_api_event("PUT", path, sub=ours.subjects["member"], body=body))
    owner = invoke(http_api_event("PUT", path, sub=ours.owner, body=body))
    assert (member.status, member.error_code) == (403, "STAFF_ONLY")
    assert (owner.status, owner.error_code) == (404, "CONSENT_CHANNEL_NOT_FOUND")
