"""Swagger UI at /docs: a dashboard developer reads the API in a browser, offline, from the local stack."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def test_docs_is_a_page_that_loads_swagger_ui_from_the_stack_itself(local_stack: LocalStackClient) -> None:
    reply = local_stack.request("GET", "/docs")

    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/html")
    sources = re.findall(r'(?:src|href)="([^"]+)"', reply.body.decode())
    assert "/docs/swagger-ui-bundle.js" in sources
    assert all(source.startswith("/docs/") for source in sources), sources  # no CDN


def test_the_swagger_ui_bundle_is_served_from_the_packaged_assets(local_stack: LocalStackClient) -> None:
    reply = local_stack.request("GET", "/docs/swagger-ui-bundle.js")

    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/javascript")
    assert b"SwaggerUIBundle" in reply.body


def test_swagger_ui_reads_the_stacks_own_document(local_stack: LocalStackClient) -> None:
    initializer = local_stack.request("GET", "/docs/swagger-initializer.js").body.decode()

    assert '"url": "/openapi.json"' in initializer
    assert '"validatorUrl": null' in initializer  # no outside validator is asked for a badge
    assert local_stack.request("GET", "/openapi.json").status == 200


def test_a_file_of_the_package_the_page_does_not_load_is_not_served(local_stack: LocalStackClient) -> None:
    for path in ("/docs/package.json", "/docs/swagger-ui-bundle.js.map", "/docs/../package.json"):
        reply = local_stack.request("GET", path)

        assert reply.status == 404, path
        assert reply.json()["error"]["code"] == "ROUTE_NOT_FOUND"


def test_docs_is_read_only(local_stack: LocalStackClient) -> None:
    reply = local_stack.request("POST", "/docs", json_body={})

    assert reply.status == 405
    assert reply.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
