"""Bad input is the caller's mistake: a 4xx in the one error shape, never a 500 and never a stack trace."""

from __future__ import annotations

import pytest

from tests.support.api import ApiResponse, call_api, invoke, leads_path
from tests.support.events import http_api_event
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """A request that does get through publishes `lead.created`; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="coach")


def _post_raw(caller, text: str) -> ApiResponse:
    return call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=text)


def _assert_error_shape(response: ApiResponse) -> None:
    assert isinstance(response.body, dict) and set(response.body) == {"error"}
    error = response.body["error"]
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in str(response.body)


def test_malformed_json_is_a_400_malformed_json(caller):
    response = _post_raw(caller, '{"name": "Ada",')
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")


def test_an_unknown_field_is_a_400_validation_failed(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Ada", "shoeSize": 42})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_validation_failure_says_where_the_problem_is(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Ada", "shoeSize": 42})
    details = response.body["error"]["details"]
    assert any("shoeSize" in detail["location"] for detail in details)


def test_a_field_of_the_wrong_type_is_a_400(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Ada", "isTest": "maybe"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_name_that_is_a_number_is_a_400(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": 42})
    assert response.status == 400


def test_an_empty_object_is_a_400(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_json_array_body_is_a_400(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=[{"name": "Ada"}])
    assert response.status == 400


@pytest.mark.parametrize("text", ['"just a string"', "42", "null", "true"])
def test_a_json_scalar_body_is_a_400(caller, text):
    assert _post_raw(caller, text).status == 400


def test_a_missing_body_is_a_400(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub)
    assert response.status == 400


def test_a_malformed_email_is_a_400(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"email": "not-an-email"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


@pytest.mark.parametrize("field", ["name", "note", "locale"])
def test_a_nul_character_in_a_text_field_is_a_400_not_a_500(caller, field):
    body = {"name": "Ada", field: "Ada\u0000Lovelace"}
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_base64_encoded_json_body_is_read_like_a_plain_one(caller):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Ada"}, is_base64=True)
    assert response.status == 201


def test_an_unknown_route_is_a_404_route_not_found(caller):
    response = call_api("GET", f"/organizations/{caller.org_id}/spaceships", sub=caller.sub)
    assert (response.status, response.error_code) == (404, "ROUTE_NOT_FOUND")


def test_an_unsupported_method_on_a_known_path_is_not_a_500(caller):
    response = call_api("DELETE", leads_path(caller.org_id), sub=caller.sub)
    assert 400 <= response.status < 500


def test_an_over_long_idempotency_key_is_a_400(caller):
    response = call_api(
        "POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Ada"}, headers={"idempotency-key": "k" * 256}
    )
    assert (response.status, response.error_code) == (400, "INVALID_IDEMPOTENCY_KEY")


BAD_REQUESTS = {
    "malformed json": lambda c: _post_raw(c, "{"),
    "unknown field": lambda c: call_api("POST", leads_path(c.org_id), sub=c.sub, body={"name": "A", "x": 1}),
    "wrong type": lambda c: call_api("POST", leads_path(c.org_id), sub=c.sub, body={"name": ["A"]}),
    "empty object": lambda c: call_api("POST", leads_path(c.org_id), sub=c.sub, body={}),
    "array body": lambda c: call_api("POST", leads_path(c.org_id), sub=c.sub, body=[]),
    "unknown route": lambda c: call_api("GET", f"/organizations/{c.org_id}/nope", sub=c.sub),
    "no sub": lambda c: call_api("GET", leads_path(c.org_id), sub=None),
    "not a member": lambda c: call_api("GET", leads_path("01890000-0000-7000-8000-000000000000"), sub=c.sub),
    "bad lead id": lambda c: call_api("GET", leads_path(c.org_id, "nope"), sub=c.sub),
    "bad cursor": lambda c: call_api("GET", leads_path(c.org_id), sub=c.sub, query={"cursor": "!!"}),
    "bad limit": lambda c: call_api("GET", leads_path(c.org_id), sub=c.sub, query={"limit": "0"}),
    "root path": lambda c: invoke(http_api_event("GET", "/", sub=c.sub)),
}


@pytest.mark.parametrize("request_kind", sorted(BAD_REQUESTS))
def test_every_error_answers_4xx_in_the_one_error_shape(caller, request_kind):
    response = BAD_REQUESTS[request_kind](caller)
    assert 400 <= response.status < 500, (response.status, response.body)
    assert response.headers["content-type"].startswith("application/json")
    _assert_error_shape(response)
