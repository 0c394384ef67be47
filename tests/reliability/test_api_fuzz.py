"""API fuzzing with schemathesis: every operation of the OpenAPI document the local stack serves
(`GET /openapi.json`), called over HTTP through the local gateway as an organization's owner (staff, and
the one role every route admits), FUZZ_EXAMPLES generated requests each (default 12; e.g.
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
from typing import TYPE_CHECKING, Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.support.fuzz_helpers import CHECKS, aim, register_edge_formats, seed_fuzz_org

if TYPE_CHECKING:
    from tests.support.local_stack import LocalStackClient

register_edge_formats()

pytestmark = pytest.mark.e2e

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))


@pytest.fixture(scope="module")
def fuzz_org(local_stack: LocalStackClient) -> dict[str, Any]:
    """An organization with a few of everything, and the owner's token."""
    return seed_fuzz_org(local_stack)


@pytest.fixture(scope="module")
def served_schema(local_stack: LocalStackClient) -> Any:
    return schemathesis.openapi.from_url(f"{local_stack.base_url}/openapi.json")


schema = schemathesis.pytest.from_fixture("served_schema")


@schema.parametrize()
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_within_its_documented_schema(case, local_stack, fuzz_org):
    aim(case, fuzz_org)
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
