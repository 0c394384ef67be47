"""Every JSON body is parsed once, with limits: nesting over 32 levels, an integer over 50 digits, `NaN`, a body
over its route's size (1 MiB; 64 KiB on the public routes) are refusals in our error shape, never a 500 from a
RecursionError or Python's own 4300-digit guard. The public capture and survey routes are no exception."""

from __future__ import annotations

import pytest

from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import capture, lead_count
from tests.support.factories import make_caller

DEEP = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"name": ' * 1000 + '"x"' + "}" * 1000
LONG_NUMBER = '{"name": "Ada", "campaignId": ' + "9" * 5000 + "}"


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """A request that gets through publishes its events; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="owner")


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT, LONG_NUMBER, '{"name": NaN}', '{"name": "Ada", "x": 1e999}'])
def test_a_staff_body_beyond_the_limits_is_a_400_malformed_json(caller, body):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body)
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")
    assert lead_count(caller.org_id) == 0


def test_a_deep_body_on_a_route_that_reads_no_body_is_refused_too(caller):
    """Every body is parsed (an array is refused as no object), so none escapes the limits."""
    response = call_api("POST", f"/organizations/{caller.org_id}/urgent-prompt/seen", sub=caller.sub, body=DEEP)
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")


def test_a_staff_body_over_1_mib_is_a_413(caller):
    body = '{"name": "Ada", "note": "' + "a" * (1024 * 1024) + '"}'
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body)
    assert (response.status, response.error_code) == (413, "BODY_TOO_LARGE")


def test_a_staff_body_under_1_mib_is_parsed_and_validated(caller):
    body = '{"name": "Ada", "note": "' + "a" * (512 * 1024) + '"}'
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")  # the note's own limit


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT, '{"email": "a@example.com", "name": ' + "1" * 5000 + "}"])
def test_the_public_capture_refuses_a_body_beyond_the_limits_with_400(caller, body):
    response = capture(caller.org_id, body)
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")
    assert lead_count(caller.org_id) == 0


def test_the_public_capture_takes_at_most_64_kib(caller):
    response = capture(caller.org_id, '{"email": "a@example.com", "note": "' + "a" * (64 * 1024) + '"}')
    assert (response.status, response.error_code) == (413, "BODY_TOO_LARGE")


@pytest.mark.parametrize("body", [DEEP, '{"rating": ' + "5" * 5000 + "}"])
def test_the_public_survey_refuses_a_body_beyond_the_limits_with_400(body):
    response = call_api("POST", "/public/ticket-surveys/some-token", sub=None, body=body)
    assert (response.status, response.error_code) == (400, "MALFORMED_JSON")
