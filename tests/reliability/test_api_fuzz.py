"""API fuzzing with schemathesis: every operation of the OpenAPI document the local stack serves
(`GET /openapi.json`), called over HTTP through the local gateway as an organization's owner (staff, and
the one role every route admits), FUZZ_EXAMPLES generated requests each (default 100; e.g.
`FUZZ_EXAMPLES=1000 make test-reliability`).

Required of every answer: no server error (5xx), a status code the document lists for the operation, the
documented content type, and a body that matches the documented schema for that status. Dates and
date-times are drawn from the calendar's range and its edges (years 0001, 1899, 3000, 9999; offsets ±14:00,
±14:01, +16:00; tests/support/edge_values.py): one outside the bounds is answered 400, never a 5xx.

The path's organization is always the caller's own (the authorization matrix covers everyone else's), and
the other path ids are real ids of that organization most of the time, so generated bodies reach the
services instead of stopping at a 404.
"""

from __future__ import annotations

import os
import zlib
from typing import TYPE_CHECKING, Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support import edge_values

if TYPE_CHECKING:
    from tests.support.local_stack import LocalStackClient

for _format, _strategy in edge_values.formats().items():
    schemathesis.openapi.format(_format, _strategy)

pytestmark = pytest.mark.e2e

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# One in this many requests keeps the generated id (a random or malformed one) instead of a real one.
KEEP_GENERATED_ID_ONE_IN = 5


@pytest.fixture(scope="module")
def fuzz_org(local_stack: LocalStackClient) -> dict[str, Any]:
    """An organization with a few of everything, and the owner's token."""
    demo = local_stack.new_organization()
    org, token = demo["organizationId"], demo["users"]["owner"]["token"]

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = local_stack.request("POST", f"/organizations/{org}{path}", token=token, json_body=body)
        assert reply.status in (200, 201), reply.body
        return reply.json()["data"]

    leads = [post("/leads", {"name": f"Fuzz {i}", "email": f"fuzz{i}@example.com"})["id"] for i in range(4)]
    pipeline = post("/pipelines", {"name": "Fuzz pipeline"})
    ids = {
        "leadId": leads,
        "pipelineId": [pipeline["id"]],
        "stageId": [s["id"] for s in pipeline["stages"]],
        "tagId": [post("/leads/tags", {"name": f"Fuzz tag {i}"})["id"] for i in range(2)],
        "campaignId": [post("/leads/campaigns", {"name": "Fuzz campaign"})["id"]],
        "taskId": [post("/tasks", {"title": f"Fuzz task {i}", "linkedLeadId": leads[i]})["id"] for i in range(2)],
    }
    deal = {"title": "Fuzz deal", "offerType": "plan", "valueMinor": 1000, "currency": "EUR"}
    queue = post("/ticket-queues", {"name": "Fuzz queue"})["id"]
    ids |= {
        "dealId": [
            post("/deals", {**deal, "expectedCloseDate": "2027-01-01", "leadId": leads[i]})["id"] for i in (0, 1)
        ],
        "ticketId": [post("/tickets", {"subject": f"Fuzz ticket {i}", "leadId": leads[i]})["id"] for i in (0, 1)],
        "conversationId": [post("/conversations", {"leadId": leads[i]})["conversation"]["id"] for i in (0, 1)],
        "queueId": [queue],
        "ruleId": [post("/ticket-routing-rules", {"name": "Fuzz rule", "keywords": ["fuzz"], "queueId": queue})["id"]],
        "mergeId": [post(f"/leads/{leads[2]}/merge", {"mergedLeadId": leads[3]})["mergeId"]],
    }
    ids["leadId"] = leads[:3]  # the fourth was merged into the third
    return {"orgId": org, "token": token, "ids": ids}


@pytest.fixture(scope="module")
def served_schema(local_stack: LocalStackClient) -> Any:
    return schemathesis.openapi.from_url(f"{local_stack.base_url}/openapi.json")


schema = schemathesis.pytest.from_fixture("served_schema")


def _aim(case: Any, org: dict[str, Any]) -> None:
    """Our organization in the path, and mostly real ids of it for the other path parameters."""
    for name, value in list(case.path_parameters.items()):
        if name == "orgId":
            case.path_parameters[name] = org["orgId"]
        elif name in org["ids"]:
            pick = zlib.crc32(str(value).encode())
            if pick % KEEP_GENERATED_ID_ONE_IN:
                pool = org["ids"][name]
                case.path_parameters[name] = pool[pick % len(pool)]


@schema.parametrize()
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_within_its_documented_schema(case, local_stack, fuzz_org):
    _aim(case, fuzz_org)
    case.call_and_validate(
        base_url=local_stack.base_url,
        headers={"authorization": f"Bearer {fuzz_org['token']}"},
        checks=CHECKS,
        timeout=15,
    )


def test_the_gateway_refuses_every_authorized_route_without_a_token(local_stack, fuzz_org):
    """API Gateway's JWT authorizer answers 401 before Lambda runs, for every route but the public ones."""
    from tests.reliability.route_table import PUBLIC, ROUTES

    wrong = []
    for key, row in ROUTES.items():
        method, template = key.split(" ", 1)
        path = template.replace("{orgId}", fuzz_org["orgId"])
        for name, pool in fuzz_org["ids"].items():
            path = path.replace("{" + name + "}", pool[0])
        reply = local_stack.request(method, path, json_body={} if method != "GET" else None)
        # A public route reaches Lambda (which judges the empty body or the unfilled token); no other does.
        refused = reply.status == 401
        if refused == (row.gate is PUBLIC) or reply.status >= 500:
            wrong.append(f"{key}: {reply.status} {reply.body[:120]!r}")
    assert not wrong, "\n".join(wrong)
