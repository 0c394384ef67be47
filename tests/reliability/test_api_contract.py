"""What the fuzzing found, pinned: the document lists every answer a route gives, in our error shape, and a
body that is not JSON is a 415 before anything parses it (a malformed multipart body was a 500)."""

from __future__ import annotations

import pytest

from tests.reliability.route_table import ROUTES
from tests.support.api import invoke
from tests.support.events import http_api_event
from tests.support.reliability_helpers import make_world


def _takes_a_body(key: str) -> bool:
    from api.handler import openapi_schema

    method, path = key.split(" ", 1)
    return "requestBody" in openapi_schema()["paths"][path][method.lower()]


# Routes that read a JSON body (the one-click unsubscribe POST reads none: a mail client's form is dropped).
BODY_ROUTES = sorted(key for key in ROUTES if _takes_a_body(key))


@pytest.fixture(scope="module")
def world():
    return make_world()


@pytest.mark.parametrize("content_type", ["text/plain", "multipart/form-data", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize("key", BODY_ROUTES)
def test_a_body_that_is_not_json_is_refused_with_415(key, content_type, world):
    method, template = key.split(" ", 1)
    path = template.replace("{orgId}", str(world.id)).replace("{", "").replace("}", "")
    event = http_api_event(method, path, sub=world.owner, body='{"name": "x"}', headers={"content-type": content_type})
    response = invoke(event)
    assert (response.status, response.error_code) == (415, "UNSUPPORTED_MEDIA_TYPE")


def test_every_operation_documents_our_error_shape_for_every_error_status():
    from api.handler import openapi_schema

    for path, operations in openapi_schema()["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            # what any route may answer (api.operations): its body's refusals, the token and membership gates
            expected = {"422", "500"} | ({"400", "413", "415"} if method in ("post", "put", "patch") else set())
            expected |= {"401", "403"} if path.startswith("/organizations/") else set()
            assert expected <= set(responses), (method, path)
            for status, response in responses.items():
                if status.startswith(("4", "5")) and "text/html" not in response["content"]:  # pages for people
                    schema = response["content"]["application/json"]["schema"]
                    # a 401 may be API Gateway's own body: Unauthorized is it or ours
                    ours = "Unauthorized" if status == "401" else "Error"
                    assert schema == {"$ref": f"#/components/schemas/{ours}"}, (method, path, status)


def test_every_operation_documents_a_success_status_and_a_204_has_no_body():
    from api.handler import openapi_schema

    for path, operations in openapi_schema()["paths"].items():
        for method, operation in operations.items():
            successes = [s for s in operation["responses"] if s.startswith("2")]
            assert successes, (method, path)
            assert not operation["responses"].get("204", {}).get("content"), (method, path)


def test_every_operation_documents_the_success_status_it_answers():
    """The authorization matrix proves each row's `ok` status on the wire; the document must list it (the
    resolver documents 200 only when a route names no responses of its own)."""
    from api.handler import openapi_schema

    paths = openapi_schema()["paths"]
    undocumented = [
        f"{key} answers {row.ok}"
        for key, row in sorted(ROUTES.items())
        if str(row.ok) not in paths[key.split(" ", 1)[1]][key.split(" ", 1)[0].lower()]["responses"]
    ]
    assert not undocumented, "\n".join(undocumented)


def test_a_one_click_unsubscribe_form_reaches_the_route():
    """RFC 8058: the mail client POSTs `List-Unsubscribe=One-Click` as a form; a random token is 404 (a page)."""
    form = {"content-type": "application/x-www-form-urlencoded"}
    event = http_api_event("POST", "/unsubscribe/forged", sub=None, body="List-Unsubscribe=One-Click", headers=form)
    response = invoke(event)
    assert response.status == 404 and "Link not valid" in response.body


@pytest.mark.parametrize("key", BODY_ROUTES)
def test_a_json_body_that_is_not_utf8_is_a_400_malformed_json(key, world):
    method, template = key.split(" ", 1)
    path = template.replace("{orgId}", str(world.id)).replace("{", "").replace("}", "")
    event = http_api_event(method, path, sub=world.owner, body=b"\xe0\x81J\xceG", is_base64=True)
    response = invoke(event)
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")


def test_a_nul_character_in_an_import_mapping_is_a_400_not_a_500(world, monkeypatch):
    body = {"fileName": "leads.csv", "columnMapping": {"name": "Full\u0000name"}}
    response = invoke(http_api_event("POST", f"/organizations/{world.id}/leads/import", sub=world.owner, body=body))
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_queue_name_taken_in_another_case_is_refused_whatever_the_alphabet(world, event_bus):
    path = f"/organizations/{world.id}/ticket-queues"
    first = invoke(http_api_event("POST", path, sub=world.owner, body={"name": "Ünterstützung Ärger"}))
    again = invoke(http_api_event("POST", path, sub=world.owner, body={"name": "ünterstützung ärger"}))
    assert first.status == 201 and (again.status, again.error_code) in ((201, None), (400, "TICKET_QUEUE_NAME_TAKEN"))
    same = invoke(http_api_event("POST", path, sub=world.owner, body={"name": "Ünterstützung Ärger"}))
    assert (same.status, same.error_code) == (400, "TICKET_QUEUE_NAME_TAKEN")
