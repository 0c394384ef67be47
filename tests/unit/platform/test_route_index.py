"""The API loads its route modules on demand (api.routing) and still answers every request as the fully
loaded API does: the committed route index is current, every route is picked for its paths whatever was
loaded before, and an unknown path or method loads nothing and answers 404 ROUTE_NOT_FOUND."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.events import http_api_event, lambda_context

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_ID = str(uuid.UUID("0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"))
PARAM = re.compile(r"<(\w+)>")


@pytest.fixture(scope="module")
def handler() -> Any:
    import api.handler

    return api.handler


@pytest.fixture(scope="module")
def routers_restored(handler: Any) -> Iterator[None]:
    """Including a router into another resolver points it there: point every router back afterwards."""
    routers = [importlib.import_module(name).router for name in handler.ROUTE_MODULES]
    before = [router.api_resolver for router in routers]
    yield
    for router, resolver in zip(routers, before, strict=True):
        router.api_resolver = resolver


@pytest.fixture(scope="module")
def eager(handler: Any, routers_restored: None) -> Any:
    """The API as it was composed before routes loaded lazily: every router included at once, in order,
    then the frame's own route."""
    from api.request_log import RoutedResolver

    app = RoutedResolver(enable_validation=True)
    for name in handler.ROUTE_MODULES:
        app.include_router(importlib.import_module(name).router)
    app.get("/openapi.json", include_in_schema=False)(handler.openapi_document)
    return app


def _lazy(handler: Any) -> Any:
    from api.routing import LazyResolver

    app = LazyResolver(enable_validation=True)
    app.get("/openapi.json", include_in_schema=False)(handler.openapi_document)
    app.configure_modules(handler.ROUTE_MODULES, frame_module=handler.__name__)
    return app


def _first_match(app: Any, method: str, path: str) -> Any:
    """The route `app` answers `method path` with, looked for as Powertools' _resolve looks."""
    for route in (*app._static_routes, *app._dynamic_routes):
        if route.method == method and route.rule.match(path):
            return route
    return None


def _samples(eager: Any) -> list[tuple[str, str]]:
    """For every route, its path with every id a UUID, and with each id in turn replaced by every literal
    segment another route has at that place (…/leads/campaigns against …/leads/<leadId>)."""
    routes = [*eager._static_routes, *eager._dynamic_routes]
    literals: dict[int, set[str]] = {}
    for route in routes:
        for place, segment in enumerate(route.path.split("/")):
            if not PARAM.fullmatch(segment):
                literals.setdefault(place, set()).add(segment)
    samples = []
    for route in routes:
        segments = route.path.split("/")
        filled = [SAMPLE_ID if PARAM.fullmatch(s) else s for s in segments]
        samples.append((route.method, "/".join(filled)))
        for place, segment in enumerate(segments):
            if PARAM.fullmatch(segment):
                for literal in sorted(literals.get(place, ())):
                    samples.append((route.method, "/".join([*filled[:place], literal, *filled[place + 1 :]])))
    return samples


def _answers(app: Any, method: str, path: str) -> Any:
    route = _first_match(app, method, path)
    return None if route is None else (route.method, route.path, route.func)


def test_the_committed_route_index_is_the_one_the_routes_declare(handler):
    committed = (ROOT / "functions" / "api" / "route_index.json").read_text(encoding="utf-8")
    assert committed == handler.route_index_text(), "functions/api/route_index.json is out of date: make openapi"


def test_the_index_holds_every_route_of_the_full_api_in_the_order_it_tries_them(handler, eager):
    from api.routing import read_index

    assert [(r.method, r.rule) for r in read_index()] == [
        (route.method, route.path) for route in (*eager._static_routes, *eager._dynamic_routes)
    ]


def test_a_request_loads_only_the_module_of_the_route_that_answers_it(handler, routers_restored):
    app = _lazy(handler)
    app.include_routes_for("GET", f"/organizations/{SAMPLE_ID}/leads/{SAMPLE_ID}")
    assert app.included_modules == {"api.leads.lead_reads"}


def test_each_route_answers_its_paths_as_in_the_full_api_on_a_fresh_start(handler, eager, routers_restored):
    fresh: dict[str | None, Any] = {}  # one fresh resolver per module the index names (same as one per request)
    index = _lazy(handler)
    differ = []
    for method, path in _samples(eager):
        module = index.module_for(method, path)
        if module not in fresh:
            fresh[module] = app = _lazy(handler)
            app.include_routes_for(method, path)
        if _answers(fresh[module], method, path) != _answers(eager, method, path):
            differ.append(f"{method} {path}")
    assert differ == []


def test_each_route_answers_its_paths_as_in_the_full_api_whatever_loaded_before(handler, eager, routers_restored):
    app = _lazy(handler)
    app.include_modules(reversed(handler.ROUTE_MODULES[1:]))  # all but the first, the other way round
    differ = []
    for method, path in _samples(eager):  # the first module's routes come first: it is loaded last
        app.include_routes_for(method, path)
        if _answers(app, method, path) != _answers(eager, method, path):
            differ.append(f"{method} {path}")
    assert differ == []
    assert app.included_modules == set(handler.ROUTE_MODULES)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", f"/organizations/{SAMPLE_ID}/spaceships"), ("DELETE", f"/organizations/{SAMPLE_ID}/leads"),
     ("GET", "/"), ("PUT", "/openapi.json")],
)  # fmt: skip
def test_a_method_and_path_no_route_takes_loads_nothing_and_answers_404_route_not_found(
    handler, routers_restored, method, path
):
    app = _lazy(handler)
    app.include_routes_for(method, path)
    assert app.included_modules == frozenset()
    response = handler.lambda_handler(http_api_event(method, path, sub="someone"), lambda_context("leadcrm-api"))
    assert response["statusCode"] == 404
    assert json.loads(response["body"])["error"]["code"] == "ROUTE_NOT_FOUND"


def _fresh_python(code: str) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "functions"), str(ROOT / "layers" / "core" / "python")]),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_importing_the_api_handler_loads_no_route_module_and_no_library_only_some_routes_need():
    loaded = json.loads(
        _fresh_python(
            "import json, sys; import api.handler as h\n"
            "print(json.dumps(sorted(m for m in sys.modules if m in h.ROUTE_MODULES or m.split('.')[0] in "
            "('phonenumbers', 'email_validator', 'pydantic_settings') "
            "or m == 'aws_lambda_powertools.event_handler.openapi.models')))"
        )
    )
    assert loaded == []


def test_the_document_is_the_same_after_some_routes_loaded_first():
    """Models built by earlier requests, modules included out of order: the document does not change."""
    same = _fresh_python(
        "import api.handler as h\n"
        "h.app.include_modules(['api.tickets.tickets', 'api.leads.lead_reads'])\n"
        "from api.leads.schemas_lead_reads import LeadDetail; LeadDetail.model_json_schema()\n"
        "print(open('openapi.json', encoding='utf-8').read() == h.openapi_text())"
    )
    assert same == "True"
