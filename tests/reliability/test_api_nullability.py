"""The OpenAPI document tells the truth about null: every request-body property it documents as nullable
accepts null. Each one is sent as null, on top of the route table's valid request, through the real handler:
the answer is no server error, and no validation failure unless leaving the property out fails the same way
(null standing for "none" where one of several properties must be given, e.g. a lead's name, email or phone).
A property that may be left out but not sent as null is documented without null (api.fields.Omittable).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

from tests.reliability.route_table import ROUTES, Req
from tests.support import openapi_walk
from tests.support.api import ApiResponse, invoke
from tests.support.capture_helpers import fresh_ip
from tests.support.events import http_api_event
from tests.support.reliability_helpers import OrgWorld, make_world


def _cases() -> list[tuple[str, tuple[str, ...]]]:
    return [(key, path) for key in sorted(ROUTES) for path in openapi_walk.nullable_body_properties(key)]


CASES = _cases()


@pytest.fixture(scope="module")
def world() -> OrgWorld:
    return make_world("Nullable")


@pytest.fixture(scope="module")
def valid_request(world: OrgWorld) -> Callable[[str], Req]:
    """One valid request per route, made on first use: validation judges a body before anything it names is
    read, so a property's null gets the same verdict whatever earlier cases did to those entities."""
    return functools.cache(lambda key: ROUTES[key].request(world))


@pytest.fixture(autouse=True)
def aws(shared_route_stack):
    """The routes run against what they use (tests/reliability/conftest.py), one moto for the module."""


def call_route(key: str, world: OrgWorld, path_ids: dict[str, str], body: Any, query: Any = None) -> ApiResponse:
    """The route as the organization's owner (a permitted caller of every gate)."""
    method, template = key.split(" ", 1)
    event = http_api_event(method, template.format(orgId=world.id, **path_ids), sub=world.owner, body=body, query=query)
    event["requestContext"]["http"]["sourceIp"] = fresh_ip()  # public capture throttles per client address
    return invoke(event)


def test_the_document_lists_nullable_body_properties():
    """A guard on the walk itself: the document does have nullable properties, top level and nested."""
    assert len(CASES) > 20 and any(len(path) > 1 for _, path in CASES)


@pytest.mark.parametrize(("key", "path"), CASES, ids=[f"{k} {'.'.join(p)}" for k, p in CASES])
def test_a_property_documented_nullable_accepts_null(key, path, world, valid_request):
    request = valid_request(key)
    body = request.body
    if len(path) > 1 and not _has(request.body, path[:-1]):
        # The valid request does not send the enclosing object: send it with its required properties at their
        # first documented value, so a refusal can only be about this property's null.
        body = openapi_walk.with_value(body, path[:-1], _minimal_object(key, path[:-1], path[-1]))
    body = openapi_walk.with_value(body, path, None)
    response = call_route(key, world, request.path, body, request.query)
    assert response.status < 500, response.body
    if _refused_as_invalid(response):
        left_out = call_route(key, world, request.path, openapi_walk.without(body, path), request.query)
        assert _refused_as_invalid(left_out) and _details(left_out) == _details(response), (
            f"null refused although documented nullable: {response.body}"
        )


def _refused_as_invalid(response: ApiResponse) -> bool:
    return response.status == 400 and response.error_code == "VALIDATION_FAILED"


def _details(response: ApiResponse) -> list[Any]:
    return [(d["location"], d["message"]) for d in response.body["error"].get("details", [])]


def _has(body: Any, path: tuple[str, ...]) -> bool:
    node = body
    for step in path:
        if not isinstance(node, dict) or step not in node:
            return False
        node = node[step]
    return isinstance(node, dict)


def _minimal_object(key: str, path: tuple[str, ...], besides: str) -> dict[str, Any]:
    schema = openapi_walk.body_schema(key) or {}
    for step in path:
        schema = next(
            (b["properties"][step] for b in openapi_walk.branches(schema) if step in (b.get("properties") or {})),
            {},
        )
    minimal: dict[str, Any] = {}
    for choice in openapi_walk.branches(schema):
        for name in set(choice.get("required", [])) - {besides}:
            values = [v for b in openapi_walk.branches(choice["properties"][name]) for v in b.get("enum", ())]
            if not values:
                pytest.skip(f"{'.'.join(path)} needs {name}, which has no documented value to send")
            minimal[name] = values[0]
    return minimal
