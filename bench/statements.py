"""SQL statements per request: the routes of tests/support/round_trips.py (the budgets the round-trip test holds)
called through `api.handler.lambda_handler` with real API Gateway HTTP API (payload 2.0) events, every statement
counted by a SQLAlchemy `before_cursor_execute` listener on the product's engine (the membership check and
publishing the events after commit included).

They run on a small organization made for this run in the bench database (a handful of rows per run): a count
does not depend on the organization's size (the leads scenario times the big one). AWS calls go to moto in this
process: nothing leaves the machine. Each route is called once to warm up (the default pipeline is seeded on
first use), then counted once on a new lead, as the test does.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy import event

from leadcrm.platform.db.engine import get_engine
from tests.support.round_trips import ROUTES, RouteBudget, route_event


def _scratch_org() -> tuple[uuid.UUID, str]:
    from leadcrm.directory.provisioning import add_membership, create_organization, create_user
    from leadcrm.directory.rules import Role

    subject = f"bench-scratch|{uuid.uuid4()}"
    with get_engine().begin() as conn:
        organization_id = create_organization(conn, f"bench scratch {subject[-8:]}", timezone="UTC")
        user_id = create_user(conn, auth_subject=subject, email=f"{subject[-12:]}@example.com", first_name="B")
        add_membership(conn, organization_id, user_id, Role.OWNER)
    return organization_id, subject


def _invoke(event_: dict[str, Any]) -> tuple[int, Any]:
    from api.handler import lambda_handler
    from tests.support.events import lambda_context

    response = lambda_handler(event_, lambda_context("leadcrm-api"))
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


def _new_lead(organization_id: uuid.UUID, subject: str) -> str:
    creates = next(route for route in ROUTES if route.name == "staff create")
    status, body = _invoke(route_event(creates, organization_id, subject, ""))
    assert status == 201, body
    return body["data"]["id"]


def _count(route: RouteBudget, organization_id: uuid.UUID, subject: str) -> tuple[int, int]:
    _invoke(route_event(route, organization_id, subject, _new_lead(organization_id, subject)))  # warm-up
    call = route_event(route, organization_id, subject, _new_lead(organization_id, subject))
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    event.listen(get_engine(), "before_cursor_execute", record)
    try:
        status, _ = _invoke(call)
    finally:
        event.remove(get_engine(), "before_cursor_execute", record)
    return status, len(sent)


def measure_statements() -> dict[str, Any]:
    from moto import mock_aws

    from leadcrm.platform.adapters.aws import reset_clients
    from leadcrm.platform.config import get_settings

    reset_clients()
    with mock_aws():
        import boto3

        boto3.client("events", region_name="eu-west-1").create_event_bus(Name=get_settings().event_bus_name)
        organization_id, subject = _scratch_org()
        rows = []
        for route in ROUTES:
            status, statements = _count(route, organization_id, subject)
            rows.append(
                {
                    "route": route.name,
                    "method": route.method,
                    "path": route.path,
                    "statements": statements,
                    "budget": route.budget,
                    "meetsTarget": statements <= route.budget,
                    "status": status,
                    "ok": status == route.status,
                }
            )
    reset_clients()
    return {"routes": rows}


def report_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "SQL statements per request (through lambda_handler; membership check and publishing after commit included)",
        f"  {'route':<28} {'sent':>5} {'budget':>7}",
    ]
    for row in results["routes"]:
        flag = "" if row["ok"] else f"  (answered {row['status']}!)"
        over = "" if row["meetsTarget"] else "  OVER BUDGET"
        lines.append(f"  {row['route']:<28} {row['statements']:>5} {row['budget']:>7}{over}{flag}")
    return lines
