"""Malformed or oversized input to the lead-move routes is a 4xx in the one error shape, never a 500."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead, default_pipeline


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Creating leads publishes lead.created after commit; the bus exists."""


@pytest.fixture
def caller():
    return make_caller(role="coach")


@pytest.fixture
def lead(caller):
    return create_lead(caller)


def _assert_4xx_error(response: ApiResponse, status: int = 400) -> None:
    assert response.status == status, response.body
    assert isinstance(response.body, dict) and set(response.body) == {"error"}
    assert response.body["error"]["code"]
    assert "Traceback" not in str(response.body)


def _patch(caller, lead_id, body):
    return call_api("PATCH", leads_path(caller.org_id, lead_id), sub=caller.sub, body=body)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"stageId": None},
        {"status": None},
        {"isTest": None},
        {"isTest": "yes"},
        {"stageId": "not-a-uuid"},
        {"status": "won"},
        {"lostReason": ""},
        {"lostReason": "x" * 501},
        {"name": "x" * 201},
        {"name": ""},
        {"email": "not an email"},
        {"phone": "call me"},
        {"note": "x" * 5001},
        {"locale": "x"},
        {"trialDate": "tomorrow"},
        {"name": "Ada\u0000"},
        {"shoeSize": 42},
        {"stageId": 42},
    ],
)
def test_a_malformed_patch_is_a_400(caller, lead, body):
    _assert_4xx_error(_patch(caller, lead["id"], body))


def test_malformed_json_is_a_400_malformed_json(caller, lead):
    response = _patch(caller, lead["id"], '{"isTest": tru')
    _assert_4xx_error(response)
    assert response.error_code == "MALFORMED_JSON"


def test_a_json_array_body_is_a_400(caller, lead):
    _assert_4xx_error(_patch(caller, lead["id"], [{"isTest": True}]))


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"stageId": str(uuid.uuid4())},
        {"leadIds": [str(uuid.uuid4())]},
        {"stageId": str(uuid.uuid4()), "leadIds": []},
        {"stageId": str(uuid.uuid4()), "leadIds": ["nope"]},
        {"stageId": str(uuid.uuid4()), "leadIds": "all"},
        {"stageId": "nope", "leadIds": [str(uuid.uuid4())]},
        {"stageId": str(uuid.uuid4()), "leadIds": [str(uuid.uuid4())], "lostReason": ""},
    ],
)
def test_a_malformed_bulk_move_is_a_400(caller, body):
    _assert_4xx_error(call_api("POST", f"{leads_path(caller.org_id)}/bulk-move-stage", sub=caller.sub, body=body))


def test_a_bulk_move_of_more_than_10000_ids_is_a_400(caller):
    sales = default_pipeline(caller.org_id)
    body = {"stageId": str(sales.stage("contacted")), "leadIds": [str(uuid.uuid4()) for _ in range(10_001)]}
    _assert_4xx_error(call_api("POST", f"{leads_path(caller.org_id)}/bulk-move-stage", sub=caller.sub, body=body))


def test_a_bulk_move_of_10000_unknown_ids_answers_with_every_one_skipped(caller):
    sales = default_pipeline(caller.org_id)
    ids = [str(uuid.uuid4()) for _ in range(10_000)]
    response = call_api(
        "POST",
        f"{leads_path(caller.org_id)}/bulk-move-stage",
        sub=caller.sub,
        body={"stageId": str(sales.stage("contacted")), "leadIds": ids},
    )
    assert response.status == 200
    assert len(response.data["skipped"]) == 10_000


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"leadIds": [str(uuid.uuid4())]},
        {"leadIds": [str(uuid.uuid4())], "archived": "yes"},
        {"leadIds": [], "archived": True},
        {"leadIds": [str(uuid.uuid4()) for _ in range(10_001)], "archived": True},
    ],
)
def test_a_malformed_bulk_archive_is_a_400(caller, body):
    _assert_4xx_error(call_api("POST", f"{leads_path(caller.org_id)}/bulk-archive", sub=caller.sub, body=body))


@pytest.mark.parametrize(
    "body",
    [{}, {"pipelineId": "nope"}, {"pipelineId": str(uuid.uuid4()), "stageId": "nope"}, {"pipelineId": None}],
)
def test_a_malformed_add_pipeline_is_a_400(caller, lead, body):
    path = f"{leads_path(caller.org_id, lead['id'])}/pipelines"
    _assert_4xx_error(call_api("POST", path, sub=caller.sub, body=body))


@pytest.mark.parametrize("body", [{}, {"stageId": "nope"}, {"stageId": str(uuid.uuid4()), "extra": 1}])
def test_a_malformed_placement_move_is_a_400(caller, lead, body):
    path = f"{leads_path(caller.org_id, lead['id'])}/pipelines/{uuid.uuid4()}"
    _assert_4xx_error(call_api("PATCH", path, sub=caller.sub, body=body))


@pytest.mark.parametrize("body", [{"lostReason": ""}, {"extra": True}, {"lostReason": 5}])
def test_a_malformed_set_primary_body_is_a_400(caller, lead, body):
    path = f"{leads_path(caller.org_id, lead['id'])}/pipelines/{uuid.uuid4()}/set-primary"
    _assert_4xx_error(call_api("POST", path, sub=caller.sub, body=body))


def test_set_primary_accepts_an_empty_object_body(caller, lead):
    path = f"{leads_path(caller.org_id, lead['id'])}/pipelines/{lead['pipelineId']}/set-primary"
    assert call_api("POST", path, sub=caller.sub, body={}).status == 200


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("POST", "/archive"),
        ("POST", "/unarchive"),
        ("DELETE", f"/pipelines/{uuid.uuid4()}"),
        ("POST", f"/pipelines/{uuid.uuid4()}/set-primary"),
    ],
)
def test_a_lead_id_that_is_not_a_uuid_is_a_404(caller, method, suffix):
    response = call_api(method, f"{leads_path(caller.org_id)}/not-a-uuid{suffix}", sub=caller.sub)
    _assert_4xx_error(response, 404)
    assert response.error_code == "LEAD_NOT_FOUND"


def test_the_bulk_routes_are_not_read_as_lead_ids(caller):
    """…/leads/bulk-move-stage and …/leads/bulk-archive resolve to their own routes (a 400 for an empty
    body), not to a lead-id route answering 404 or 405."""
    for name in ("bulk-move-stage", "bulk-archive"):
        response = call_api("POST", f"{leads_path(caller.org_id)}/{name}", sub=caller.sub, body={})
        assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_member_gets_403_on_every_move_route(caller, lead):
    member = make_caller(role="member", organization=caller.organization)
    routes = [
        ("PATCH", leads_path(caller.org_id, lead["id"]), {"isTest": True}),
        ("POST", f"{leads_path(caller.org_id, lead['id'])}/archive", None),
        ("POST", f"{leads_path(caller.org_id)}/bulk-archive", {"leadIds": [lead["id"]], "archived": True}),
        ("POST", f"{leads_path(caller.org_id)}/bulk-move-stage", {"stageId": lead["stageId"], "leadIds": [lead["id"]]}),
        ("POST", f"{leads_path(caller.org_id, lead['id'])}/pipelines", {"pipelineId": lead["pipelineId"]}),
    ]
    for method, path, body in routes:
        response = call_api(method, path, sub=member.sub, body=body)
        assert response.status == 403, (method, path, response.body)
