"""GET /organizations/{orgId}/leads: malformed or oversized query parameters are a 400 JSON error, never a 500."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import call_api, leads_path
from tests.support.factories import make_caller
from tests.support.lead_list_helpers import insert_lead, make_board

A_UUID = str(uuid.UUID(int=1))


@pytest.fixture(scope="module")
def caller():
    caller = make_caller()
    insert_lead(make_board(caller.org_id, default=True))
    return caller


def _get(caller, query):
    return call_api("GET", leads_path(caller.org_id), sub=caller.sub, query=query)


@pytest.mark.parametrize(
    "query",
    [
        {"status": "happy"},
        {"status": "new,happy"},
        {"status": ""},
        {"status": ",".join(["new"] * 19)},
        {"pipelineId": "not-a-uuid"},
        {"pipelineId": "42"},
        {"stageIds": f"{A_UUID},nope"},
        {"stageIds": ",".join([A_UUID] * 101)},
        {"tags": "nope"},
        {"tags": f"{A_UUID},,{A_UUID}"},
        {"tags": ",".join(str(uuid.uuid4()) for _ in range(51))},
        {"campaignId": "' OR 1=1 --"},
        {"archived": "maybe"},
        {"assignee": "someone"},
        {"assignee": A_UUID[:-1]},
        {"assignee": "ME!"},
        {"isTest": "perhaps"},
        {"search": "a"},
        {"search": "x" * 101},
        {"sort": "name"},
        {"sort": "created_at"},
        {"order": "up"},
        {"limit": "0"},
        {"limit": "201"},
        {"limit": "-1"},
        {"limit": "ten"},
        {"limit": "1e3"},
    ],
    ids=lambda q: ",".join(f"{k}={v[:20]}" for k, v in q.items()),
)
def test_a_malformed_or_oversized_parameter_is_a_400_validation_failed(caller, query):
    response = _get(caller, query)
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED"), response.body


@pytest.mark.parametrize("search", ["   ", " a ", "ad\x00a"])
def test_a_search_that_is_blank_too_short_once_trimmed_or_holds_nul_is_a_400(caller, search):
    response = _get(caller, {"search": search})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED"), response.body


@pytest.mark.parametrize("cursor", ["garbage!", "AAAA", "x", "é" * 8, "A" * 36, "%00"])
def test_a_cursor_this_api_did_not_issue_is_a_400_invalid_cursor(caller, cursor):
    response = _get(caller, {"cursor": cursor})
    assert (response.status, response.error_code) == (400, "INVALID_CURSOR"), response.body


def test_an_oversized_cursor_is_a_400(caller):
    response = _get(caller, {"cursor": "A" * 65})
    assert response.status == 400
    assert response.error_code in {"VALIDATION_FAILED", "INVALID_CURSOR"}


def test_an_unknown_parameter_is_ignored(caller):
    assert _get(caller, {"colour": "blue"}).status == 200


@pytest.mark.parametrize(
    "query",
    [
        {"tags": ",".join(str(uuid.uuid4()) for _ in range(50))},
        {"stageIds": ",".join(str(uuid.uuid4()) for _ in range(100))},
        {"status": "new,new,lost"},
        {"search": "x" * 100},
        {"limit": "100"},
        {"isTest": "false"},
        {"archived": "all"},
    ],
    ids=lambda q: ",".join(f"{k}={v[:20]}" for k, v in q.items()),
)
def test_parameters_at_their_bounds_are_accepted(caller, query):
    response = _get(caller, query)
    assert response.status == 200, response.body
