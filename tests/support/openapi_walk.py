"""Reading the API's own OpenAPI document (api.handler.openapi_schema()) to drive requests from it: the
operation of a route-table key, the leaves of its request body and query (a path of keys and the schema
there), and a copy of a body with one leaf replaced."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 8


def document() -> dict[str, Any]:
    from api.handler import openapi_schema

    return openapi_schema()


def operation(key: str) -> dict[str, Any]:
    method, path = key.split(" ", 1)
    return document()["paths"][path][method.lower()]


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    schemas = document()["components"]["schemas"]
    while "$ref" in schema:
        schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of an anyOf / oneOf (resolved), or the schema itself."""
    schema = resolve(schema)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [b for choice in schema[key] for b in branches(choice)]
    return [schema]


def nullable(schema: dict[str, Any]) -> bool:
    return any(b.get("type") == "null" for b in branches(schema))


def body_schema(key: str) -> dict[str, Any] | None:
    body = operation(key).get("requestBody")
    return resolve(body["content"]["application/json"]["schema"]) if body else None


@dataclass(frozen=True)
class Leaf:
    """A value in a request: where ("body" or "query"), the keys to it (a list item is index 0), its schema."""

    location: str
    path: tuple[str | int, ...]
    schema: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.location}." + ".".join(str(p) for p in self.path)


def _leaves(schema: dict[str, Any], path: tuple[str | int, ...], depth: int) -> Iterator[tuple[tuple, dict]]:
    if depth > MAX_DEPTH:
        return
    for choice in branches(schema):
        kind = choice.get("type")
        if kind == "object" and "properties" in choice:
            for name, sub in choice["properties"].items():
                yield from _leaves(sub, (*path, name), depth + 1)
        elif kind == "array":
            yield from _leaves(choice.get("items", {}), (*path, 0), depth + 1)
        elif kind in ("string", "integer", "number"):
            yield path, choice


def leaves(key: str) -> list[Leaf]:
    """Every string, integer and number a request of the operation can carry, one entry per (path, schema)."""
    found: list[Leaf] = []
    body = body_schema(key)
    if body is not None:
        found += [Leaf("body", path, schema) for path, schema in _leaves(body, (), 0)]
    for parameter in operation(key).get("parameters", []):
        if parameter["in"] == "query":
            found += [Leaf("query", (parameter["name"], *path), s) for path, s in _leaves(parameter["schema"], (), 0)]
    unique: dict[tuple, Leaf] = {}
    for leaf in found:
        unique.setdefault((leaf.location, leaf.path, repr(sorted(leaf.schema.items()))), leaf)
    return list(unique.values())


def nullable_body_properties(key: str) -> list[tuple[str, ...]]:
    """The paths of the body's properties documented as nullable (top level and inside nested objects)."""
    found: list[tuple[str, ...]] = []

    def walk(schema: dict[str, Any], path: tuple[str, ...], depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        for choice in branches(schema):
            for name, sub in (choice.get("properties") or {}).items():
                if nullable(sub):
                    found.append((*path, name))
                walk(sub, (*path, name), depth + 1)

    body = body_schema(key)
    if body is not None:
        walk(body, (), 0)
    return sorted(set(found))


def with_value(container: Any, path: tuple[str | int, ...], value: Any) -> Any | None:
    """A deep copy of `container` (a body, or the query as a dict) with `value` at `path`, creating the
    missing objects and lists on the way; None when the path goes through something else (a scalar)."""
    root = copy.deepcopy(container) if container is not None else {}
    node = root
    for step, following in zip(path, (*path[1:], None), strict=True):
        if following is None:
            if isinstance(step, int):
                if not isinstance(node, list):
                    return None
                node[:] = [value] if not node else [value, *node[1:]]
            elif isinstance(node, dict):
                node[step] = value
            else:
                return None
            break
        empty: Any = [] if isinstance(following, int) else {}
        if isinstance(step, int):
            if not isinstance(node, list):
                return None
            if not node:
                node.append(empty)
            node = node[0]
        else:
            if not isinstance(node, dict):
                return None
            if not isinstance(node.get(step), (dict, list)):
                node[step] = empty
            node = node[step]
    return root


def without(container: Any, path: tuple[str, ...]) -> Any:
    """A deep copy of `container` with the property at `path` left out (nothing to leave out: a copy)."""
    root = copy.deepcopy(container)
    node = root
    for step in path[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(step), dict):
            return root
        node = node[step]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    return root
