"""Ingestion throughput against raw INSERT baselines, measured in the same run on the same database.

Every path takes the same N enquiries (distinct people) into an organization made for it in this run, one
enquiry per transaction, as the consumers do:

- raw INSERT (baseline): one `INSERT INTO leads` row per transaction, nothing else: what one lead costs at least;
- raw INSERT, multi-row: all N rows in one statement: what a batch could cost;
- capture_lead (service): the intake path of every channel (dedup, pipeline, status event, receipt, outbox);
- public capture (lambda_handler): the same through the API function (validation, throttle counter, JSON);
- more paths register in INTAKE_PATHS (the Meta / WhatsApp / SES processors: their ingestion handler fed
  SQS batches of N messages) and are measured and compared to the same baselines.

Events are published to moto in this process (nothing leaves the machine). Figures: leads per second and
the ratio of each path's time per lead to the raw single-row INSERT's.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7

ENQUIRIES = 300
BASELINE = "raw INSERT, one row per transaction"


def _organization() -> tuple[uuid.UUID, uuid.UUID, uuid.UUID]:
    """A fresh organization with its default pipeline: (organization, pipeline, new stage)."""
    from leadcrm.directory.provisioning import create_organization
    from leadcrm.pipelines.stages import ensure_default_pipeline

    with get_engine().begin() as conn:
        organization_id = create_organization(conn, f"bench intake {uuid.uuid4().hex[:8]}", timezone="UTC")
        ensure_default_pipeline(conn, organization_id)
        pipeline, stage = conn.execute(
            text(
                "SELECT p.id, s.id FROM pipelines p JOIN pipeline_stages s ON s.pipeline_id = p.id "
                "WHERE p.organization_id = :o AND p.is_default AND s.category = 'new'"
            ),
            {"o": organization_id},
        ).one()
    return organization_id, pipeline, stage


def _people(n: int) -> list[dict[str, str]]:
    run = uuid.uuid4().hex[:6]
    return [{"name": f"Intake {i}", "email": f"intake.{run}.{i}@example.com"} for i in range(n)]


_INSERT = text(
    "INSERT INTO leads (id, organization_id, name, email, source, status, pipeline_id, stage_id) "
    "VALUES (:id, :o, :name, :email, 'minisite', 'new', :p, :s)"
)


def raw_single(n: int) -> float:
    organization_id, pipeline, stage = _organization()
    started = time.perf_counter()
    for person in _people(n):
        with get_engine().begin() as conn:
            conn.execute(_INSERT, {"id": uuid7(), "o": organization_id, "p": pipeline, "s": stage, **person})
    return time.perf_counter() - started


def raw_multi(n: int) -> float:
    organization_id, pipeline, stage = _organization()
    rows = [{"id": uuid7(), "o": organization_id, "p": pipeline, "s": stage, **p} for p in _people(n)]
    started = time.perf_counter()
    with get_engine().begin() as conn:
        conn.execute(_INSERT, rows)
    return time.perf_counter() - started


def capture_service(n: int) -> float:
    from leadcrm.leads.capture import PublicSubmission, capture_lead
    from leadcrm.platform.db.uow import UnitOfWork

    organization_id, _, _ = _organization()
    started = time.perf_counter()
    for person in _people(n):
        with UnitOfWork() as uow:
            capture_lead(uow, organization_id, PublicSubmission(received=dict(person), **person))
            uow.commit()
    return time.perf_counter() - started


def capture_handler(n: int) -> float:
    from api.handler import lambda_handler
    from tests.support.events import http_api_event, lambda_context

    organization_id, _, _ = _organization()
    context = lambda_context("leadcrm-api")
    started = time.perf_counter()
    for i, person in enumerate(_people(n)):
        event = http_api_event(
            "POST", f"/leads/organization/{organization_id}", sub=None, body=person, authorizer=False
        )
        event["requestContext"]["http"]["sourceIp"] = f"198.18.{i // 250}.{i % 250}"  # under the per-IP limit
        response = lambda_handler(event, context)
        assert response["statusCode"] == 201, response
    return time.perf_counter() - started


# name → callable(n) returning the seconds n enquiries took. Plug more paths in here.
INTAKE_PATHS: dict[str, Callable[[int], float]] = {
    BASELINE: raw_single,
    "raw INSERT, multi-row (one statement)": raw_multi,
    "capture_lead (service, per enquiry)": capture_service,
    "public capture (lambda_handler)": capture_handler,
}


def measure_intake(n: int = ENQUIRIES) -> dict[str, Any]:
    import os

    from moto import mock_aws

    from leadcrm.platform.adapters.aws import reset_clients
    from leadcrm.platform.config import get_settings

    os.environ.setdefault("CAPTURE_LIMIT_PER_ORG_PER_MINUTE", str(n * 2))
    get_settings.cache_clear()
    reset_clients()
    rows: dict[str, dict[str, float]] = {}
    with mock_aws():
        import boto3

        boto3.client("events", region_name="eu-west-1").create_event_bus(Name=get_settings().event_bus_name)
        for name, path in INTAKE_PATHS.items():
            seconds = path(n)
            rows[name] = {"seconds": round(seconds, 3), "leadsPerSecond": round(n / seconds, 1)}
    reset_clients()
    base = rows[BASELINE]["seconds"]
    for row in rows.values():
        row["timeVsBaseline"] = round(row["seconds"] / base, 2)
    return {"enquiries": n, "paths": rows}


def report_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"Ingestion throughput, {results['enquiries']} enquiries per path, one per transaction unless said",
        f"{'path':<50} {'leads/s':>9} {'×base time':>11}",
    ]
    for name, row in results["paths"].items():
        lines.append(f"{name:<50} {row['leadsPerSecond']:9.1f} {row['timeVsBaseline']:11.2f}")
    return lines
