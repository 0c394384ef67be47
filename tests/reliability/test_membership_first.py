"""An outsider learns nothing from a refusal: whatever is wrong with a request to an organization's route (a body
that is not JSON, nested too deep, a number too long, an unknown field, an id that is not an id, a query value
of the wrong type), a caller who is not a member of that organization gets 403 NOT_A_MEMBER, never the 400 or
404 that would describe our field rules or tell an id exists.

Powertools validates path, query and body before any middleware or route runs; api.handler asks for the
membership before it answers any refusal. Each invalid request is sent to every organization route of
tests/reliability/route_table.py by the owner too, who must get a refusal other than 403: the request really
is invalid, so an outsider's 403 proves the order rather than a route that happened to accept it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.reliability.route_table import PUBLIC, ROUTES
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
