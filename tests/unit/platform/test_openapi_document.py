"""The committed openapi.json: current, valid OpenAPI 3.1, and a contract a client can be generated from.

Built from the routes' declarations (api.operations), no I/O: a route change without `make openapi` fails here.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from openapi_spec_validator import validate

ROOT = Path(__file__).resolve().parents[3]
CODE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
CAMEL_CASE = re.compile(r"^[a-z][a-z0-9]*([A-Z][a-z0-9]*)*$")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    from api.handler import openapi_schema

    return openapi_schema()


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, item in document["paths"].items() for method, op in item.items()]


def _public(path: str) -> bool:
    return not path.startswith("/organizations/")


def test_the_committed_document_is_the_one_the_routes_generate():
    from api.handler import openapi_text

    committed = (ROOT / "openapi.json").read_text(encoding="utf-8")
    assert committed == openapi_text(), "openapi.json is out of date: run make openapi"


def test_the_document_is_a_valid_openapi_3_1_document(document):
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_operation_has_a_summary_and_a_description(document):
    lacking = [
        f"{method.upper()} {path}"
        for method, path, op in _operations(document)
        if not op.get("description") or not op.get("summary") or op["summary"] == f"{method.upper()} {path}"
    ]
    assert not lacking


def test_operation_ids_are_camel_case_unique_and_at_most_40_characters(document):
    ids = [op["operationId"] for _, _, op in _operations(document)]
    assert [i for i in ids if not CAMEL_CASE.match(i) or len(i) > 40] == []
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_every_operation_has_one_tag_and_every_tag_is_a_described_capability(document):
    described = {tag["name"] for tag in document["tags"] if tag.get("description")}
    assert all(len(op["tags"]) == 1 and op["tags"][0] in described for _, _, op in _operations(document))


def test_every_organization_route_requires_the_bearer_token_and_the_public_ones_none(document):
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"], scheme["bearerFormat"]) == ("http", "bearer", "JWT")
    assert document["security"] == [{"bearerAuth": []}]
    for method, path, op in _operations(document):
        expected = [] if _public(path) else [{"bearerAuth": []}]
        assert op.get("security") == expected, (method, path)


def test_every_organization_route_documents_the_refusals_every_caller_may_meet(document):
    for method, path, op in _operations(document):
        responses = op["responses"]
        assert "INTERNAL_ERROR" in responses["500"]["x-error-codes"]
        if not _public(path):
            assert responses["401"]["x-error-codes"] == ["UNAUTHENTICATED"], (method, path)
            assert {"NOT_A_MEMBER", "FEATURE_DISABLED"} <= set(responses["403"]["x-error-codes"]), (method, path)
        if method in ("post", "put", "patch"):
            assert {"MALFORMED_JSON", "VALIDATION_FAILED"} <= set(responses["400"]["x-error-codes"]), (method, path)
            assert responses["413"]["x-error-codes"] == ["BODY_TOO_LARGE"]
            assert responses["415"]["x-error-codes"] == ["UNSUPPORTED_MEDIA_TYPE"]


def test_every_json_error_response_lists_its_codes_with_the_one_error_schema(document):
    wrong = []
    for method, path, op in _operations(document):
        for status, response in op["responses"].items():
            if not status.startswith(("4", "5")) or "text/html" in response["content"]:
                continue  # a page for people (the unsubscribe link) carries no code
            codes = response.get("x-error-codes")
            schema = response["content"]["application/json"]["schema"]
            # a 401 is API Gateway's own body or ours (Unauthorized: either), every other error ours
            expected = "Unauthorized" if status == "401" else "Error"
            if schema != {"$ref": f"#/components/schemas/{expected}"}:
                wrong.append(f"{method.upper()} {path} {status}: schema {schema}")
            if codes is None or not all(CODE.match(code) and code in response["description"] for code in codes):
                wrong.append(f"{method.upper()} {path} {status}: codes {codes}")
            if not codes and status != "422":  # 422 is listed on every operation by the resolver (api.operations)
                wrong.append(f"{method.upper()} {path} {status}: no codes")
    assert not wrong, "\n".join(wrong)


def test_a_route_that_raises_a_not_found_code_documents_it_as_a_404(document):
    """Each id in a path can be unknown (or another organization's): the operation says which code it gets."""
    for _method, path, op in _operations(document):
        ids = [part for part in path.split("/") if part.startswith("{") and part != "{orgId}"]
        if ids and not path.startswith("/unsubscribe/"):  # a page answers an unknown unsubscribe link
            assert any(code.endswith("_NOT_FOUND") for code in op["responses"]["404"]["x-error-codes"]), path


def _body_schemas(document: dict[str, Any], op: dict[str, Any]) -> list[dict[str, Any]]:
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    return [branch for branch in schema.get("anyOf", [schema]) if branch.get("type") != "null"]


def _resolved(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_every_request_body_has_an_example_its_own_schema_accepts(document):
    lacking, refused = [], []
    for method, path, op in _operations(document):
        if "requestBody" not in op:
            continue
        for branch in _body_schemas(document, op):
            examples = _resolved(document, branch).get("examples")
            if not examples:
                lacking.append(f"{method.upper()} {path}")
            for example in examples or ():
                root = {**branch, "components": document["components"]}  # the $refs resolve in the document
                try:
                    jsonschema.Draft202012Validator(root).validate(example)
                except jsonschema.ValidationError as error:
                    refused.append(f"{method.upper()} {path}: {error.message}")
    assert not lacking and not refused, "\n".join(lacking + refused)


def test_schema_names_carry_no_module_path_and_no_generated_suffix(document):
    names = document["components"]["schemas"]
    generated = re.compile(r"^(api|leadcrm)__|-(Input|Output)$|^Body_")
    assert [n for n in names if generated.search(n)] == []


def test_an_envelope_schema_is_named_after_what_it_carries(document):
    names = document["components"]["schemas"]
    assert {"LeadEnvelope", "LeadListItemPage"} <= set(names)
    # pydantic's own names for a parametrized generic (Envelope_Lead_, ListEnvelope_Tag_) never reach a client
    assert [n for n in names if "_" in n] == []


def test_a_401_documents_api_gateways_own_body_beside_ours(document):
    """API Gateway's JWT authorizer refuses before the API runs, with `{"message": "Unauthorized"}`."""
    unauthorized = document["components"]["schemas"]["Unauthorized"]
    assert {"$ref": "#/components/schemas/GatewayUnauthorized"} in unauthorized["anyOf"]
    assert {"$ref": "#/components/schemas/Error"} in unauthorized["anyOf"]
    assert document["components"]["schemas"]["GatewayUnauthorized"]["required"] == ["message"]
