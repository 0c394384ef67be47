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


def test_the_openapi_document_is_a_valid_openapi_document():
    import schemathesis

    schemathesis.openapi.from_dict(_openapi().body).validate()  # OpenAPI 3.1's own JSON Schema


def _operations(document):
    """operationId -> (METHOD path, operation)"""
    return {
        operation["operationId"]: (f"{method.upper()} {path}", operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


def _links(document):
    """(source path, status, link) for every link of the document."""
    for path, item in document["paths"].items():
        for operation in item.values():
            for status, response in operation["responses"].items():
                for link in response.get("links", {}).values():
                    yield path, status, link


def _body_schema(document, operation):
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_every_link_names_an_operation_with_the_parameters_and_body_fields_it_fills():
    document = _openapi().body
    operations = _operations(document)
    wrong = []
    for source, status, link in _links(document):
        target_path, target = operations[link["operationId"]]
        declared = {p["name"] for p in target.get("parameters", [])}
        for name, expression in link["parameters"].items():
            if name not in declared:
                wrong.append(f"{source} {status} → {target_path}: no parameter {name}")
            if expression.startswith("$request.path.") and "{" + expression.rsplit(".", 1)[1] + "}" not in source:
                wrong.append(f"{source} {status} → {target_path}: {expression} is not in the source's path")
        expressions = [*link["parameters"].values(), *link.get("requestBody", {}).values()]
        if link["parameters"].get("orgId") != "$request.path.orgId":
            wrong.append(f"{source} {status} → {target_path}: not in the source's organization")
        if not any(expression.startswith("$response.body#/") for expression in expressions):
            wrong.append(f"{source} {status} → {target_path}: takes nothing from the answer")
        for field in link.get("requestBody", {}):
            if field not in _body_schema(document, target).get("properties", {}):
                wrong.append(f"{source} {status} → {target_path}: the body has no field {field}")
    assert not wrong, "\n".join(wrong)


def test_a_create_links_to_what_can_be_done_next_with_what_it_made():
    """The sequences the stateful fuzzing follows (tests/reliability/test_api_stateful_fuzz.py)."""
    document = _openapi().body
    operations = _operations(document)
    org = "/organizations/{orgId}"
    expected = {
        ("post", f"{org}/leads"): [
            f"GET {org}/leads/{{leadId}}",
            f"PATCH {org}/leads/{{leadId}}",
            f"PATCH {org}/leads/{{leadId}}/pipelines/{{pipelineId}}",
            f"POST {org}/leads/{{leadId}}/convert",
            f"POST {org}/tasks",
            f"POST {org}/deals",
            f"POST {org}/tickets",
        ],
        ("post", f"{org}/tasks"): [f"PATCH {org}/tasks/{{taskId}}", f"POST {org}/tasks/{{taskId}}/complete"],
        ("post", f"{org}/deals"): [f"POST {org}/deals/{{dealId}}/move", f"PATCH {org}/deals/{{dealId}}"],
        ("post", f"{org}/tickets"): [
            f"POST {org}/tickets/{{ticketId}}/respond",
            f"POST {org}/tickets/{{ticketId}}/customer-reply",
        ],
    }
    for (method, path), targets in expected.items():
        for status, response in document["paths"][path][method]["responses"].items():
            if not status.startswith("2"):
                continue
            linked = {operations[link["operationId"]][0] for link in response.get("links", {}).values()}
            assert set(targets) <= linked, (path, status, sorted(set(targets) - linked))
