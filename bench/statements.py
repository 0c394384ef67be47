"""SQL statements per request: the main routes called through `api.handler.lambda_handler` with real API
Gateway HTTP API (payload 2.0) events, every statement counted by a SQLAlchemy `before_cursor_execute`
listener on the product's engine (publishing the events after commit included: one stamp of the outbox).

Reads run on the big organization; writes on a small organization made for this run in the same database
(a handful of rows per run). AWS calls go to moto in this process: nothing leaves the machine.
Each route is called once to warm up (the default pipeline is seeded on first use), then counted once.
Add a route by adding a `Probe` to `probes()`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event

from bench.scenarios import OWNER_SUBJECT, BigOrg
from leadcrm.platform.db.engine import get_engine


@dataclass(frozen=True)
class Probe:
    name: str
    method: str
    path: Callable[[], str]
    body: Callable[[], Any] | None = None
    query: dict[str, str] | None = None
    subject: str = OWNER_SUBJECT
    expect: int = 200


@dataclass
class Scratch:
    organization_id: uuid.UUID
    subject: str
    stage_id: str = ""


def _scratch_org() -> Scratch:
    from leadcrm.directory.provisioning import add_membership, create_organization, create_user
    from leadcrm.directory.rules import Role

    subject = f"bench-scratch|{uuid.uuid4()}"
    with get_engine().begin() as conn:
        organization_id = create_organization(conn, f"bench scratch {subject[-8:]}", timezone="UTC")
        user_id = create_user(conn, auth_subject=subject, email=f"{subject[-12:]}@example.com", first_name="B")
        add_membership(conn, organization_id, user_id, Role.OWNER)
    return Scratch(organization_id, subject)


def _call(probe: Probe) -> tuple[int, Any]:
    from api.handler import lambda_handler
    from tests.support.events import http_api_event, lambda_context

    body = probe.body() if probe.body else None
    response = lambda_handler(
        http_api_event(probe.method, probe.path(), sub=probe.subject, body=body, query=probe.query),
        lambda_context("leadcrm-api"),
    )
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


def probes(org: BigOrg, scratch: Scratch) -> list[Probe]:
    big = f"/organizations/{org.id}"
    mine = f"/organizations/{scratch.organization_id}"
    lead = {"id": ""}

    def new_lead() -> str:
        status, body = _call(
            Probe("", "POST", lambda: f"{mine}/leads", lambda: {"name": "Bench"}, subject=scratch.subject)
        )
        assert status == 201, body
        lead["id"] = body["data"]["id"]
        return lead["id"]

    def scratch_lead_path(suffix: str = "") -> Callable[[], str]:
        return lambda: f"{mine}/leads/{new_lead()}{suffix}"

    detail_target = org.lead_ids[0]
    return [
        Probe("GET leads (list page of 50)", "GET", lambda: f"{big}/leads"),
        Probe("GET leads?search=…", "GET", lambda: f"{big}/leads", query={"search": org.name_terms[0]}),
        Probe("GET leads/{id} (detail + timeline)", "GET", lambda: f"{big}/leads/{detail_target}"),
        Probe("GET leads/queue", "GET", lambda: f"{big}/leads/queue"),
        Probe("GET urgent-prompt", "GET", lambda: f"{big}/urgent-prompt"),
        Probe("GET tasks", "GET", lambda: f"{big}/tasks"),
        Probe("GET pipelines", "GET", lambda: f"{big}/pipelines"),
        Probe(
            "POST leads (staff create)",
            "POST",
            lambda: f"{mine}/leads",
            lambda: {"name": "Bench Lead", "email": f"{uuid.uuid4().hex[:10]}@example.com"},
            subject=scratch.subject,
            expect=201,
        ),
        Probe(
            "POST leads/organization/{id} (public capture)",
            "POST",
            lambda: f"/leads/organization/{scratch.organization_id}",
            lambda: {"name": "Web Lead", "email": f"{uuid.uuid4().hex[:10]}@example.com"},
            subject=scratch.subject,
            expect=201,
        ),
        Probe(
            "PATCH leads/{id} (stage move)",
            "PATCH",
            scratch_lead_path(),
            lambda: {"status": "contacted"},
            subject=scratch.subject,
        ),
        Probe(
            "PUT leads/{id}/follow-up",
            "PUT",
            scratch_lead_path("/follow-up"),
            lambda: {"at": "2030-01-01T10:00:00Z", "type": "call"},
            subject=scratch.subject,
        ),
        Probe(
            "POST leads/{id}/touches (no answer)",
            "POST",
            scratch_lead_path("/touches"),
            lambda: {"channel": "call", "outcome": "no_answer"},
            subject=scratch.subject,
        ),
        Probe(
            "POST tasks",
            "POST",
            lambda: f"{mine}/tasks",
            lambda: {"title": "Call back"},
            subject=scratch.subject,
            expect=201,
        ),
    ]


def measure_statements(org: BigOrg) -> dict[str, Any]:
    from moto import mock_aws

    from leadcrm.platform.adapters.aws import reset_clients

    reset_clients()
    with mock_aws():
        import boto3

        from leadcrm.platform.config import get_settings

        boto3.client("events", region_name="eu-west-1").create_event_bus(Name=get_settings().event_bus_name)
        scratch = _scratch_org()
        rows = []
        for probe in probes(org, scratch):
            _call(probe)  # warm-up: first-use work (the default pipeline) is not the route's steady cost
            statements: list[str] = []

            def record(conn: Any, cursor: Any, statement: str, *args: Any, sink: list[str] = statements) -> None:
                sink.append(statement)

            engine = get_engine()
            setup = probe.path  # a probe whose path creates its lead must not count that creation
            path = setup()
            counted = Probe(probe.name, probe.method, lambda p=path: p, probe.body, probe.query, probe.subject)
            event.listen(engine, "before_cursor_execute", record)
            try:
                status, body = _call(counted)
            finally:
                event.remove(engine, "before_cursor_execute", record)
            rows.append(
                {"route": probe.name, "statements": len(statements), "status": status, "ok": status == probe.expect}
            )
    reset_clients()
    return {"routes": rows}


def report_lines(results: dict[str, Any]) -> list[str]:
    lines = ["", "SQL statements per request (through lambda_handler; publishing after commit included)"]
    for row in results["routes"]:
        flag = "" if row["ok"] else f"  (answered {row['status']}!)"
        lines.append(f"  {row['route']:<50} {row['statements']:>3}{flag}")
    return lines
