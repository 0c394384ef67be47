"""Every value has bounds, and a value out of bounds is a 400 in our error shape that changes nothing.

Two parts:
- the declaration: every date, instant and time of every request body and query parameter is one of the
  shared types of api.fields (one calendar, one offset range, ISO 8601 text only), every integer and number
  is bounded on both sides, every text has a maximum length (so no route states a bound of its own);
- the behaviour, driven from the OpenAPI document through the real handler: for every date, date-time,
  time, integer, number and text of every operation's body and query, the fixed edges (years 0001, 1899,
  1900, 2999, 3000, 9999; offsets ±14:00, ±14:01, +16:00; `0` and `-1` as dates; 2^31, 2^63; text of 100 000
  characters, NUL) and BOUNDS_EXAMPLES values drawn by hypothesis over the whole space, each on top of the
  route table's valid request. A value inside the bounds gets anything but a 5xx; one outside gets a 400 in
  our error shape; and a refused request leaves everything the organization owns as it was.

BOUNDS_EXAMPLES (default 3) sets the drawn values per field, e.g. `BOUNDS_EXAMPLES=50 make test-reliability`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import os
import types
import typing
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from annotated_types import Ge, Gt, Le, Lt, MaxLen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.reliability.route_table import ROUTES, Req
from tests.support import edge_values, openapi_walk
from tests.support.api import ApiResponse, invoke
from tests.support.capture_helpers import fresh_ip
from tests.support.events import http_api_event
from tests.support.reliability_helpers import OrgWorld, make_world, org_fingerprint

BOUNDS_EXAMPLES = int(os.environ.get("BOUNDS_EXAMPLES", "3"))


# -- the declaration ---------------------------------------------------------------------------------------------


def _request_fields() -> Iterator[tuple[str, Any, tuple[Any, ...]]]:
    """(where, leaf type, its constraints) for every value of every route's body and query, models walked."""
    from api.handler import every_route_loaded

    app = every_route_loaded()  # every route module (they load on demand, api.routing)

    seen: set[type] = set()

    def leaves(annotation: Any, metadata: tuple[Any, ...], where: str) -> Iterator[tuple[str, Any, tuple]]:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            inner, *extra = typing.get_args(annotation)
            found = [m for x in extra for m in getattr(x, "metadata", [x])]
            yield from leaves(inner, (*metadata, *found), where)
        elif origin in (typing.Union, types.UnionType):
            for choice in typing.get_args(annotation):
                yield from leaves(choice, metadata, where)
        elif origin in (list, dict):
            for choice in typing.get_args(annotation):
                yield from leaves(choice, (), where + "[]")
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in seen:
                seen.add(annotation)
                for name, field in annotation.model_fields.items():
                    yield from leaves(field.annotation, tuple(field.metadata), f"{annotation.__name__}.{name}")
        elif origin is not typing.Literal:
            yield where, annotation, metadata

    for route in (*app._static_routes, *app._dynamic_routes):
        for parameter in (*route.dependant.query_params, *route.dependant.body_params):
            label = f"{route.method} {route.openapi_path} {parameter.name}"
            yield from leaves(parameter.field_info.annotation, tuple(parameter.field_info.metadata), label)


def _validators(metadata: tuple[Any, ...]) -> set[Any]:
    return {getattr(m, "func", None) for m in metadata}


def test_every_date_instant_and_time_is_a_shared_bounded_type():
    from api import fields

    parsers = {dt.date: fields.iso_day_text, dt.datetime: fields.iso_instant_text, dt.time: fields.wall_clock_text}
    unbounded = [
        f"{where}: {leaf.__name__}"
        for where, leaf, metadata in _request_fields()
        if leaf in parsers and parsers[leaf] not in _validators(metadata)
    ]
    assert not unbounded, "use api.fields.Day / Instant / InstantUtcByDefault / WallClockTime:\n" + "\n".join(unbounded)


def test_no_request_value_is_a_date_type_pydantic_would_read_leniently():
    """pydantic.AwareDatetime, NaiveDatetime, FutureDate …: their lax mode reads numbers as timestamps."""
    import pydantic

    lenient = {pydantic.AwareDatetime, pydantic.NaiveDatetime, pydantic.PastDate, pydantic.FutureDate}
    lenient |= {pydantic.PastDatetime, pydantic.FutureDatetime}
    found = [f"{where}: {leaf.__name__}" for where, leaf, _ in _request_fields() if leaf in lenient]
    assert not found, "\n".join(found)


def test_every_integer_and_number_is_bounded_on_both_sides():
    def bounded(metadata: tuple[Any, ...]) -> bool:
        low = any(isinstance(m, (Ge, Gt)) for m in metadata)
        high = any(isinstance(m, (Le, Lt)) for m in metadata)
        digits = any(getattr(m, "max_digits", None) for m in metadata)
        return (low and high) or digits

    unbounded = [
        f"{where}: {leaf.__name__}"
        for where, leaf, metadata in _request_fields()
        if leaf in (int, float, decimal.Decimal) and not bounded(metadata)
    ]
    assert not unbounded, "\n".join(unbounded)


def test_every_text_has_a_maximum_length():
    def bounded(metadata: tuple[Any, ...]) -> bool:
        if any(isinstance(m, MaxLen) for m in metadata):
            return True
        patterns = [getattr(m, "pattern", None) for m in metadata]
        # an anchored pattern without an open-ended repetition, e.g. ^[A-Z]{3}$
        return any(p and p.endswith("$") and not any(q in p for q in ("*", "+", ",}")) for p in patterns)

    unbounded = [where for where, leaf, metadata in _request_fields() if leaf is str and not bounded(metadata)]
    assert not unbounded, "\n".join(unbounded)


def test_the_declaration_walk_sees_every_kind_of_value():
    """A guard on the walk: it reaches nested models, dates, times, integers, numbers and text."""
    kinds = {leaf for _, leaf, _ in _request_fields()}
    assert {dt.date, dt.datetime, dt.time, int, float, str, uuid.UUID, bool} <= kinds


# -- the behaviour -------------------------------------------------------------------------------------------------


def _cases() -> list[tuple[str, str, tuple[str | int, ...]]]:
    cases = set()
    for key in ROUTES:
        for leaf in openapi_walk.leaves(key):
            if edge_values.kind(leaf.schema) is not None:
                cases.add((key, leaf.location, leaf.path))
    return sorted(cases, key=str)


CASES = _cases()


@pytest.fixture(scope="module")
def world() -> OrgWorld:
    return make_world("Bounds")


@pytest.fixture(scope="module")
def valid_request(world: OrgWorld) -> Callable[[str], Req]:
    """One valid request per route, made on first use and reused for each of its values."""
    return functools.cache(lambda key: ROUTES[key].request(world))


@pytest.fixture(autouse=True)
def aws(shared_route_stack):
    """The routes run against what they use (tests/reliability/conftest.py), one moto for the module."""


class Saved:
    """The organization's fingerprint as of the last accepted request: a refused one must leave it so."""

    def __init__(self, world: OrgWorld) -> None:
        self.world = world
        self.fingerprint = org_fingerprint(world.id)

    def unchanged(self) -> bool:
        return org_fingerprint(self.world.id) == self.fingerprint

    def accepted(self) -> None:
        self.fingerprint = org_fingerprint(self.world.id)


def _send(key: str, world: OrgWorld, request: Req, location: str, path: tuple, value: Any) -> ApiResponse | None:
    body, query = request.body, dict(request.query or {})
    if location == "body":
        body = openapi_walk.with_value(body, path, value)
        if body is None:
            return None
    else:
        query[str(path[0])] = edge_values.as_query(value)
    method, template = key.split(" ", 1)
    path_text = template.format(orgId=world.id, **request.path)
    event = http_api_event(method, path_text, sub=world.owner, body=body, query=query)
    event["requestContext"]["http"]["sourceIp"] = fresh_ip()  # public capture throttles per client address
    return invoke(event)


def _error_shaped(response: ApiResponse) -> bool:
    body = response.body
    return (
        isinstance(body, dict)
        and set(body) == {"error"}
        and isinstance(body["error"].get("code"), str)
        and isinstance(body["error"].get("message"), str)
    )


def _judge(response: ApiResponse, inside: bool, saved: Saved | None, value: Any) -> str | None:
    """What is wrong with the answer, or None. `saved`: compare what the organization owns after a refusal
    (None: the caller compares once for a batch of refusals)."""
    shown = repr(value)[:60]
    refused = response.status >= 400
    changed = saved is not None and refused and not saved.unchanged()
    if saved is not None and not refused:
        saved.accepted()
    if response.status >= 500:
        return f"{shown}: {response.status} {str(response.body)[:200]}"
    if refused and not _error_shaped(response):
        return f"{shown}: {response.status} not in our error shape: {str(response.body)[:200]}"
    # A value so long that the body passes its route's size limit (64 KiB on the public routes) is refused
    # before it is read: 413 BODY_TOO_LARGE, the other answer the bounds have.
    too_large = response.status == 413 and response.error_code == "BODY_TOO_LARGE"
    if not inside and response.status != 400 and not too_large:
        return f"{shown} is out of bounds, answered {response.status} {str(response.body)[:200]}"
    if changed:
        return f"{shown}: refused ({response.status}) but changed what the organization owns"
    return None


# The public form's blank fields count as not sent (api.leads.schemas_capture.PublicLeadBody): a visitor who
# left the phone empty is not refused over it.
BLANK_IS_NOT_SENT = {"POST /leads/organization/{orgId}"}


CASE_IDS = [f"{key} {where}.{'.'.join(map(str, path))}" for key, where, path in CASES]


@pytest.mark.parametrize(("key", "location", "path"), CASES, ids=CASE_IDS)
def test_a_value_out_of_bounds_is_a_400_and_changes_nothing(key, location, path, world, valid_request):
    request = valid_request(key)
    schemas = [leaf.schema for leaf in openapi_walk.leaves(key) if (leaf.location, leaf.path) == (location, path)]

    def inside(value: Any) -> bool:  # a value any branch of the property admits
        if key in BLANK_IS_NOT_SENT and isinstance(value, str) and not value.strip():
            return True
        return any(edge_values.kind(s) and edge_values.verdict(s, value) for s in schemas)

    saved = Saved(world)
    wrong: list[str] = []
    fixed = [value for schema in schemas for value in edge_values.edges(schema)]
    # The edges out of bounds first, checked as one batch: each must be refused, and all of them together
    # must leave the organization as it was.
    for value in [v for v in fixed if not inside(v)]:
        response = _send(key, world, request, location, path, value)
        if response is not None and (problem := _judge(response, False, None, value)):
            wrong.append(problem)
    if not saved.unchanged():
        wrong.append("the refused edges changed what the organization owns")
        saved.accepted()
    for value in [v for v in fixed if inside(v)]:
        response = _send(key, world, request, location, path, value)
        if response is not None and (problem := _judge(response, True, saved, value)):
            wrong.append(problem)

    drawn = st.one_of([edge_values.values(s) for s in schemas if edge_values.kind(s)])

    @settings(
        max_examples=BOUNDS_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(value=drawn)
    def drawn_values(value: Any) -> None:
        response = _send(key, world, request, location, path, value)
        if response is not None and (problem := _judge(response, inside(value), saved, value)):
            wrong.append(problem)

    drawn_values()
    assert not wrong, f"{key} {location}.{'.'.join(map(str, path))}:\n" + "\n".join(dict.fromkeys(wrong))


# -- what a cursor carries -------------------------------------------------------------------------------------

CURSOR_ROUTES = sorted(
    key
    for key in ROUTES
    if key.startswith("GET ")
    and any(p["name"] == "cursor" for p in openapi_walk.operation(key).get("parameters", []))
)
FORGED_INSTANTS = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-01-01T00:00:00+23:59", "0"]


def test_the_cursor_walk_finds_the_paged_lists():
    assert len(CURSOR_ROUTES) >= 8


@pytest.mark.parametrize("key", CURSOR_ROUTES)
def test_a_cursor_forged_around_an_instant_out_of_bounds_is_never_a_5xx(key, world, valid_request):
    """Cursors are text the client sends back. One forged around an edge instant (a keyset of an instant and
    an id, of a day, of three parts) is a 400 in our error shape that changes nothing (INVALID_CURSOR where it
    should hold an instant), or a page where the list's key is text (a name) or a day: never a statement the
    driver cannot encode."""
    from leadcrm.platform.keyset import encode_keyset

    request = valid_request(key)
    saved = Saved(world)
    some_id = str(uuid.uuid4())
    forged = [encode_keyset([at, some_id]) for at in FORGED_INSTANTS]
    forged += [encode_keyset(["0001-01-01", some_id]), encode_keyset([FORGED_INSTANTS[0], some_id, ""])]
    wrong = []
    for cursor in forged:
        response = _send(key, world, request, "query", ("cursor",), cursor)
        assert response is not None
        refused = response.status >= 400
        if response.status >= 500 or (refused and (response.status != 400 or not _error_shaped(response))):
            wrong.append(f"{cursor}: {response.status} {str(response.body)[:160]}")
        elif refused and not saved.unchanged():
            wrong.append(f"{cursor}: refused but changed what the organization owns")
    assert not wrong, "\n".join(wrong)
