"""An outsider learns nothing from a refusal: whatever is wrong with a request to an organization's route (a body
that is not JSON, nested too deep, a number too long, an unknown field, an id that is not an id, a query value
of the wrong type), a caller who is not a member of that organization gets 403 NOT_A_MEMBER, never the 400 or
404 that would describe our field rules or tell an id exists.

Powertools validates path, query and body before any middleware or route runs; api.handler asks for the
membership before it answers any refusal. Each invalid request is sent to every organization route of
tests/reliability/route_table.py by the owner too, who must get a refusal other than 403: the request really
is invalid, so an outsider's 403 proves the order rather than a route that happened to accept it.

A route's own rules (an unknown engagement signal, a cursor that is not ours, an id that is not an id) come
after its gate, too: a member below the route's role gets the gate's 403, not the rule. That handler's check
for outsiders answers them 403 whatever the route does, so only callers inside the organization show the
order; the second test asks them (MEMBERSHIP_RULES_EXAMPLES drawn requests per route, default 4).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest

from tests.reliability.route_table import MANAGER, MEMBER, PUBLIC, ROUTES, STAFF
from tests.support.api import ApiResponse, invoke
from tests.support.events import http_api_event
from tests.support.factories import make_user
from tests.support.reliability_helpers import OrgWorld, make_world

BODY_METHODS = {"POST", "PUT", "PATCH"}
# A route with nothing a validator could refuse (a GET without ids or typed query parameters) has no invalid
# request: the authorization matrix shows its outsiders get 403.
ORGANIZATION_ROUTES = sorted(key for key, row in ROUTES.items() if row.gate is not PUBLIC)


def _operation(key: str) -> dict[str, Any]:
    from api.handler import openapi_schema

    method, path = key.split(" ", 1)
    return openapi_schema()["paths"][path][method.lower()]


def _typed_query_parameters(key: str) -> list[str]:
    """Query parameters whose type a word cannot have (numbers, booleans, enums, dates, ids)."""
    names = []
    for parameter in _operation(key).get("parameters", []):
        schema = parameter.get("schema", {})
        options = schema.get("anyOf", [schema])
        free_text = any(o.get("type") == "string" and not o.keys() & {"enum", "format", "pattern"} for o in options)
        if parameter["in"] == "query" and not free_text:
            names.append(parameter["name"])
    return names


def invalid_requests(key: str) -> dict[str, dict[str, Any]]:
    """Each way the request can be wrong for this route: name -> {path ids, body, query}."""
    method, template = key.split(" ", 1)
    ids = [part[1:-1] for part in template.split("/") if part.startswith("{") and part != "{orgId}"]
    random_ids = {name: str(uuid.uuid4()) for name in ids}
    variants: dict[str, dict[str, Any]] = {}
    if method in BODY_METHODS:
        variants["a body that is not JSON"] = {"path": random_ids, "body": '{"name": '}
        variants["a body nested 1000 deep"] = {"path": random_ids, "body": "[" * 1000 + "]" * 1000}
        variants["a 5000-digit number"] = {"path": random_ids, "body": '{"n": ' + "7" * 5000 + "}"}
        if "requestBody" in _operation(key):
            variants["an unknown field"] = {"path": random_ids, "body": {"noSuchField": True}}
    if ids:
        variants["ids that are not ids"] = {"path": {name: "not-an-id" for name in ids}, "body": None}
    if typed := _typed_query_parameters(key):
        variants["query values of the wrong type"] = {
            "path": random_ids,
            "body": None,
            "query": dict.fromkeys(typed, "not-a-value!"),
        }
    return variants


@pytest.fixture(autouse=True)
def aws(shared_route_stack):
    """What the routes use (tests/reliability/conftest.py), one moto for the module."""


@pytest.fixture(scope="module")
def worlds() -> tuple[OrgWorld, OrgWorld, str]:
    loner = make_user()
    assert loner.auth_subject is not None
    return make_world("Ours"), make_world("Theirs"), loner.auth_subject


def _call(key: str, org_id: uuid.UUID, variant: dict[str, Any], subject: str) -> ApiResponse:
    method, template = key.split(" ", 1)
    path = template.format(orgId=org_id, **variant["path"])
    return invoke(http_api_event(method, path, sub=subject, body=variant["body"], query=variant.get("query")))


@pytest.mark.parametrize("key", [key for key in ORGANIZATION_ROUTES if invalid_requests(key)])
def test_an_outsider_gets_403_whatever_is_wrong_with_the_request(key, worlds):
    ours, theirs, loner = worlds
    wrong: list[str] = []
    for name, variant in invalid_requests(key).items():
        owner = _call(key, ours.id, variant, ours.owner)
        if not 400 <= owner.status < 500 or owner.status == 403:
            wrong.append(f"{name}: the owner got {owner.status} {owner.error_code}, so the request is not invalid")
        for label, subject in (("another organization's owner", theirs.owner), ("a user of no organization", loner)):
            response = _call(key, ours.id, variant, subject)
            if (response.status, response.error_code) != (403, "NOT_A_MEMBER"):
                wrong.append(f"{name}, {label}: {response.status} {str(response.body)[:160]}")
    assert not wrong, f"{key}:\n" + "\n".join(wrong)


def test_an_organization_id_that_is_not_an_id_is_refused_before_the_body(worlds):
    ours, _, _ = worlds
    response = invoke(http_api_event("POST", "/organizations/nope/leads", sub=ours.owner, body={"noSuchField": 1}))
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


# -- the route's own rules come after its gate ------------------------------------------------------------------
#
# The requests above are refused by the resolver before any route runs. A route refuses well-formed requests
# too, by its own rules (an unknown engagement signal in a scoring model, a period that is too long). Those
# must come after the route's gate: a caller the gate refuses (not a member; a member below the route's role)
# gets the gate's 403 and never learns them. The requests are drawn from each operation's schema (schemathesis,
# positive), on real ids of the organization (the route table's valid request), and every one the owner gets
# a refusal of that is not about the request's form is sent by each refused caller.

RULES_EXAMPLES = int(os.environ.get("MEMBERSHIP_RULES_EXAMPLES", "4"))
# Refusals of a request's form, made before any route runs (the resolver, the body middleware): the document
# publishes those rules, and a member sees them whatever the route's gate. Any other refusal is a route's.
FORM_CODES = frozenset({"VALIDATION_FAILED", "MALFORMED_JSON", "UNSUPPORTED_MEDIA_TYPE", "BODY_TOO_LARGE"})
GATE_CODES = {STAFF: "STAFF_ONLY", MANAGER: "OWNER_OR_ADMIN_ONLY"}
BELOW = {MEMBER: (), STAFF: ("member",), MANAGER: ("coach", "member")}


@pytest.fixture(scope="module")
def document_schema() -> Any:
    import schemathesis

    from api.handler import openapi_schema

    return schemathesis.openapi.from_dict(openapi_schema())


def _refused_callers(key: str, worlds: tuple[OrgWorld, OrgWorld, str]) -> dict[str, tuple[str, str]]:
    """label -> (subject, the code the gate answers them)"""
    ours, theirs, loner = worlds
    row = ROUTES[key]
    refused = {
        "another organization's owner": (theirs.owner, "NOT_A_MEMBER"),
        "a user of no organization": (loner, "NOT_A_MEMBER"),
    }
    for role in BELOW[row.gate]:
        if role not in row.callers and f"{role}/own" not in row.callers:
            refused[f"a {role}"] = (ours.subjects[role], GATE_CODES[row.gate])
    return refused


def _has_query(key: str, name: str) -> bool:
    return any(p["in"] == "query" and p["name"] == name for p in _operation(key).get("parameters", []))


def _fixed_requests(key: str, valid: Any) -> list[tuple[dict[str, str], Any, dict[str, str] | None]]:
    """(path ids, body, query) the route's own code refuses, whatever the draws: ids that are not ids, a
    cursor that is not one of ours (each with the row's valid body)."""
    requests = []
    if valid.path:
        requests.append(({name: "not-an-id" for name in valid.path}, valid.body, valid.query))
    if _has_query(key, "cursor"):
        requests.append((valid.path, valid.body, {**(valid.query or {}), "cursor": "bm90LW91cnM"}))
    return requests


@pytest.mark.parametrize("key", ORGANIZATION_ROUTES)
def test_a_caller_the_gate_refuses_never_learns_the_routes_own_rules(key, worlds, document_schema):
    """The module's moto (`aws`): what an accepted request uses (an owner's generated request may well be
    accepted)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    ours = worlds[0]
    method, template = key.split(" ", 1)
    operation = document_schema[template][method]
    valid = ROUTES[key].request(ours)
    refused = _refused_callers(key, worlds)
    wrong: list[str] = []

    def judge(ids: dict[str, str], body: Any, query: dict[str, str] | None) -> None:
        path = template.format(orgId=ours.id, **ids)
        owner = invoke(http_api_event(method, path, sub=ours.owner, body=body, query=query or None))
        if not 400 <= owner.status < 500 or owner.status in (401, 403) or owner.error_code in FORM_CODES:
            return  # accepted, or refused for its form (before any route runs, for everyone)
        for label, (subject, code) in refused.items():
            response = invoke(http_api_event(method, path, sub=subject, body=body, query=query or None))
            if (response.status, response.error_code) != (403, code):
                wrong.append(f"{label}: {response.status} {response.error_code} (the owner: {owner.error_code})")

    for ids, body, query in _fixed_requests(key, valid):
        judge(ids, body, query)

    @settings(
        max_examples=RULES_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def drawn(data: st.DataObject) -> None:
        case = data.draw(operation.as_strategy())
        body = case.body if isinstance(case.body, dict | list) else None
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (case.query or {}).items()}
        judge(valid.path, body, query)

    drawn()
    assert not wrong, f"{key}:\n" + "\n".join(sorted(set(wrong)))
