"""GET /openapi.json: the API describes itself from the routes' types."""

from __future__ import annotations

from tests.support.api import invoke
from tests.support.events import http_api_event


def _openapi():
    return invoke(http_api_event("GET", "/openapi.json", sub=None, authorizer=False))


def test_the_openapi_document_is_served_without_a_token():
    response = _openapi()
    assert response.status == 200
    assert response.body["openapi"].startswith("3.")


def test_the_openapi_document_lists_the_lead_routes():
    paths = _openapi().body["paths"]
    assert set(paths["/organizations/{orgId}/leads"]) == {"get", "post"}
    assert "get" in paths["/organizations/{orgId}/leads/{leadId}"]


def test_the_openapi_document_describes_bodies_in_camel_case():
    schemas = _openapi().body["components"]["schemas"]
    assert "isTest" in schemas["CreateLeadBody"]["properties"]
