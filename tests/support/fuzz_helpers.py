"""What the schemathesis suites (tests/reliability/test_api_fuzz.py, test_api_stateful_fuzz.py) share: an
organization of the local stack with a few of everything, the checks every answer must pass, and how a
generated request is aimed at that organization and its real ids."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support import edge_values

if TYPE_CHECKING:
    from collections.abc import Container

    from tests.support.local_stack import LocalStackClient

# No server error (5xx), a status code the document lists for the operation, the documented content type,
# and a body that matches the documented schema for that status.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# One in this many requests keeps the generated id (a random or malformed one) instead of a real one.
KEEP_GENERATED_ID_ONE_IN = 5


def register_edge_formats() -> None:
    """Dates and date-times drawn from the calendar's range and its edges (tests/support/edge_values.py)."""
    for name, strategy in edge_values.formats().items():
        schemathesis.openapi.format(name, strategy)


def seed_fuzz_org(local_stack: LocalStackClient) -> dict[str, Any]:
    """An organization with a few of everything, and the owner's token (staff, and the one role every route
    admits)."""
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


def aim(case: Any, org: dict[str, Any], keep: Container[str] = ()) -> None:
    """Our organization in the path, and mostly real ids of it for the other path parameters, except those
    named in `keep` (ids a stateful link took from an earlier answer)."""
    for name, value in list(case.path_parameters.items()):
        if name == "orgId":
            case.path_parameters[name] = org["orgId"]
        elif name in org["ids"] and name not in keep:
            pick = zlib.crc32(str(value).encode())
            if pick % KEEP_GENERATED_ID_ONE_IN:
                pool = org["ids"][name]
                case.path_parameters[name] = pool[pick % len(pool)]
