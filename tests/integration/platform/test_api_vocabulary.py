"""One vocabulary across the API (issue 21), read from the API's own document so a new route is held to it:
one name for the person responsible, one assignee filter, `nextCursor` and one page size on every list,
and periods as `from`/`to` days."""

from __future__ import annotations

from typing import Any

import pytest

from leadcrm.platform.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from tests.support.api import call_api, invoke
from tests.support.events import http_api_event
from tests.support.factories import make_caller

OLD_NAMES = {"assignedToUserId", "ownerUserId", "allOwners"}
OLD_FILTERS = {"assignedTo", "owner", "ownerId", "period"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return invoke(http_api_event("GET", "/openapi.json", sub=None, authorizer=False)).body


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _reads(document: dict[str, Any]):
    for path, item in document["paths"].items():
        if "get" in item:
            yield path, item["get"]


def _lists(document: dict[str, Any]):
    """GET routes whose 200 body's `data` is an array."""
    for path, operation in _reads(document):
        content = operation["responses"].get("200", {}).get("content", {}).get("application/json")
        if not content:
            continue
        body = _resolve(document, content["schema"])
        data = _resolve(document, body.get("properties", {}).get("data", {}))
        if data.get("type") == "array":
            yield path, operation, body


def _query(operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "query"}


def test_no_schema_names_the_person_responsible_otherwise_than_assignee_user_id(document):
    offenders = {
        f"{name}.{prop}"
        for name, schema in document["components"]["schemas"].items()
        for prop in schema.get("properties", {})
        if prop in OLD_NAMES
    }
    assert offenders == set()


def test_no_route_takes_the_old_filter_names(document):
    offenders = {
        f"{path} {name}" for path, operation in _reads(document) for name in _query(operation) if name in OLD_FILTERS
    }
    assert offenders == set()


def test_every_list_answers_next_cursor(document):
    lists = list(_lists(document))
    assert len(lists) > 20  # the walk finds the lists
    missing = {path for path, _, body in lists if "nextCursor" not in body.get("properties", {})}
    assert missing == set()


def test_every_paged_list_takes_one_limit_with_the_same_bounds(document):
    bounds = {}
    for path, operation, _ in _lists(document):
        params = _query(operation)
        if "cursor" in params or "limit" in params:
            assert {"cursor", "limit"} <= set(params), path
            schema = params["limit"]["schema"]
            bounds[path] = (schema.get("minimum"), schema.get("maximum"), schema.get("default"))
    assert len(bounds) > 10
    assert set(bounds.values()) == {(1, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE)}


def test_every_list_of_records_someone_is_responsible_for_filters_by_assignee(document):
    paths = {path for path, operation in _reads(document) if "assignee" in _query(operation)}
    assert {
        "/organizations/{orgId}/leads",
        "/organizations/{orgId}/leads/queue",
        "/organizations/{orgId}/tasks",
        "/organizations/{orgId}/conversations",
        "/organizations/{orgId}/deals",
        "/organizations/{orgId}/tickets",
    } <= paths


def _format(schema: dict[str, Any]) -> str | None:
    """A parameter's format, through the `anyOf [..., null]` of an optional one."""
    return schema.get("format") or next((s["format"] for s in schema.get("anyOf", []) if "format" in s), None)


def test_every_period_is_from_and_to_as_days(document):
    periods = {path: _query(op) for path, op in _reads(document) if "from" in _query(op) or "to" in _query(op)}
    assert len(periods) >= 6
    formats = {(path, name): _format(q[name]["schema"]) for path, q in periods.items() for name in ("from", "to")}
    assert set(formats.values()) == {"date"}, formats


@pytest.mark.parametrize("limit", ["0", str(MAX_PAGE_SIZE + 1), "ten"])
@pytest.mark.parametrize("route", ["leads", "tasks", "deals", "tickets", "conversations", "members", "leads/tags"])
def test_a_limit_outside_the_one_page_size_is_a_400_on_every_list(route, limit):
    caller = make_caller(role="owner")
    response = call_api("GET", f"/organizations/{caller.org_id}/{route}", sub=caller.sub, query={"limit": limit})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


@pytest.mark.parametrize("route", ["pipelines", "ticket-queues", "ticket-routing-rules", "scoring-models"])
def test_a_list_bounded_by_nature_answers_whole_with_a_null_next_cursor(route):
    caller = make_caller(role="owner")
    response = call_api("GET", f"/organizations/{caller.org_id}/{route}", sub=caller.sub)
    assert response.status == 200, response.body
    assert isinstance(response.body["data"], list) and response.body["nextCursor"] is None
