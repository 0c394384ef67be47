"""Route modules imported by the first request that needs one, not at cold start.

The API is one function. Importing every route module (and with them every capability's use cases, queries
and pydantic schemas) was most of its cold start, though a request runs one route. The committed route
index (api/route_index.json, written by `make openapi` beside openapi.json; tests/unit/platform/
test_route_index.py fails when it is stale) lists every route, in the order the fully loaded resolver tries
them, with the module that declares it. A request's method and path are matched against the index, and the
module of the route that answers it in the fully loaded API is imported and its router included, once.

Why the same route answers as if everything were loaded: Powertools tries the static routes, then the
dynamic ones, each list in registration order (`_static_routes + _dynamic_routes`). After every include
both lists are put back into the index's order, so the loaded routes are always a subsequence of the full
API's routes in the full API's order. The first loaded route that matches is then the first route of the
full API that matches, as soon as that route's module is loaded, whatever was loaded before. A method and
path no route takes load nothing and get the resolver's own 404, as before.
"""

from __future__ import annotations

import importlib
import json
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from aws_lambda_powertools.event_handler.api_gateway import ResponseBuilder, Route

from api.request_log import RoutedResolver

INDEX_FILE = Path(__file__).with_name("route_index.json")


@dataclass(frozen=True)
class IndexedRoute:
    """`method rule` (Powertools' rule: `/organizations/<orgId>/leads/<leadId>`) is declared in `module`."""

    method: str
    rule: str
    module: str


def _pattern(rule: str) -> re.Pattern[str]:
    return LazyResolver._compile_regex(rule)  # the resolver's own compilation: the same match as a route's


def in_resolution_order(registered: Iterable[IndexedRoute]) -> list[IndexedRoute]:
    """Routes in the order Powertools tries them, given the order they were registered in: static first."""
    routes = list(registered)
    return [r for r in routes if _pattern(r.rule).groups == 0] + [r for r in routes if _pattern(r.rule).groups > 0]


def declared_routes(modules: Sequence[str]) -> list[IndexedRoute]:
    """Every route each module's `router` declares, in declaration order (imports every module)."""
    declared = []
    for name in modules:
        for key in importlib.import_module(name).router._routes:  # the router's own table: (rule, methods, …)
            rule, methods = key[0], key[1]
            declared += [IndexedRoute(method.upper(), rule, name) for method in _methods(methods)]
    return declared


def _methods(methods: str | Sequence[str]) -> tuple[str, ...]:
    return (methods,) if isinstance(methods, str) else tuple(methods)


def index_text(routes: Sequence[IndexedRoute]) -> str:
    """The index as committed: one route a line, so that a diff shows the routes that moved."""
    lines = ",\n".join(f"  {json.dumps([r.method, r.rule, r.module])}" for r in routes)
    return '{"routes": [\n' + lines + "\n]}\n"


def read_index(path: Path = INDEX_FILE) -> list[IndexedRoute]:
    return [IndexedRoute(*entry) for entry in json.loads(path.read_text(encoding="utf-8"))["routes"]]


class LazyResolver(RoutedResolver):
    """The HTTP resolver of api.handler: routes declared on it directly (its frame) are there from the start;
    the capability modules' routers are included when a request first needs one of their routes."""

    def configure_modules(
        self, modules: Sequence[str], frame_module: str, index: Sequence[IndexedRoute] | None = None
    ) -> None:
        """`modules`: every route module, in the order the full API includes them; the routes registered so
        far are the frame's, declared in `frame_module`; `index`: every route in resolution order
        (read_index() when left out)."""
        self._modules = tuple(modules)
        frame = (*self._static_routes, *self._dynamic_routes)
        self._frame = [IndexedRoute(route.method, route.path, frame_module) for route in frame]
        self._given_index = None if index is None else tuple(index)
        self._included: set[str] = set()
        self._lock = threading.Lock()

    @cached_property
    def _index(self) -> tuple[tuple[IndexedRoute, re.Pattern[str]], ...]:
        """The index with its patterns, compiled on the first request rather than at cold start."""
        routes = self._given_index if self._given_index is not None else read_index()
        return tuple((route, _pattern(route.rule)) for route in routes)

    @cached_property
    def _position(self) -> dict[tuple[str, str], int]:
        return {(route.method, route.rule): i for i, (route, _) in enumerate(self._index)}

    @property
    def included_modules(self) -> frozenset[str]:
        return frozenset(self._included)

    def module_for(self, method: str, path: str) -> str | None:
        """The module whose route answers `method path` in the fully loaded API (the frame's, or None)."""
        for route, pattern in self._index:
            if route.method == method and pattern.match(path):
                return route.module
        return None

    def include_routes_for(self, method: str, path: str) -> None:
        if len(self._included) == len(self._modules):
            return
        module = self.module_for(method, path)
        if module in self._modules and module not in self._included:
            self.include_modules([module])

    def include_modules(self, modules: Iterable[str]) -> None:
        """Each module's router included once, then the routes put back into the full API's order."""
        with self._lock:
            for name in modules:
                if name not in self._included:
                    self.include_router(importlib.import_module(name).router)
                    self._included.add(name)
            self._restore_order()

    def include_every_module(self) -> None:
        self.include_modules(self._modules)

    def registered_routes(self) -> list[IndexedRoute]:
        """What the fully loaded API would register, in its order: the modules' routes, then the frame's."""
        return [*declared_routes(self._modules), *self._frame]

    def _restore_order(self) -> None:
        if len(self._included) == len(self._modules):
            # everything is here: the order the routes were declared in, whatever the index says (the
            # document is built from this state, and the index from the same declarations)
            position = {(r.method, r.rule): i for i, r in enumerate(in_resolution_order(self.registered_routes()))}
        else:
            position = self._position
        last = len(position)  # a route the index lacks (a stale index: its test fails) goes last
        key = position.get

        def order(route: Route) -> int:
            return key((route.method, route.path), last)

        self._static_routes.sort(key=order)
        self._dynamic_routes.sort(key=order)

    def _resolve(self) -> ResponseBuilder:
        # Powertools' own method and path, as its _resolve reads them just after this
        self.include_routes_for(self.current_event.http_method.upper(), self._remove_prefix(self.current_event.path))
        return super()._resolve()
