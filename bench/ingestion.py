"""`make bench-ingestion` (python -m bench.ingestion): ingestion throughput against raw INSERT baselines.

- Meta: BENCH_META_LEADS (default 10,000) fetched Lead Ads leads (`meta.lead`, as graph_fetch queues them
  after its Graph read, which happens outside the VPC and touches no database) through
  `ingestion.handler.lambda_handler` in SQS batches of 10 (routing, the shared create with dedup, the
  campaign hook, the attribution, the auto-task, the outbox), against a loop of single-row INSERTs of the same
  leads on the same database, each in its own transaction. Target: >= 25 % of the raw loop's rate.
- CSV: a BENCH_CSV_ROWS (default 100,000) row file in S3 imported by the handler's `lead_import` message,
  against multi-row INSERTs (1,000 rows per statement) of the same rows. Target: >= 50 % of the raw rate,
  peak RSS <= 256 MB. It runs in a process of its own, so its peak RSS is its own (moto, which holds the
  file in that process's memory, included).

AWS is moto (`mock_aws`) in process; PostgreSQL is the bench cluster of `bench.database` (its own database,
`leadcrm_bench_ingestion`, made anew by every `make bench`, then given 20,000 leads of another organization
and analyzed, as a database in service is: `_in_service`). Figures are printed and
written to bench/results-ingestion.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results-ingestion.json")
META_RATIO_TARGET = 0.25
CSV_RATIO_TARGET = 0.50
CSV_RSS_TARGET_MB = 256
SQS_BATCH = 10
INSERT_ROWS_PER_STATEMENT = 1_000
IN_SERVICE_LEADS = 20_000  # other organizations' leads in the database, analyzed, before anything is measured


def log(message: str) -> None:
    print(message, flush=True)


def _point_the_product_at(url: str) -> None:
    from leadcrm.platform.adapters.aws import reset_clients
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine

    os.environ.update(
        {
            "DATABASE_URL": url,
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "eu-west-1",
            "AWS_REGION": "eu-west-1",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "EVENT_BUS_NAME": "leadcrm-events",
        }
    )
    os.environ.pop("AWS_ENDPOINT_URL", None)
    get_settings.cache_clear()
    reset_clients()
    dispose_engine()


def _organization(name: str) -> tuple[Any, uuid.UUID]:
    """A new organization with an owner (the auto-task's assignee); (owner actor, default pipeline's new stage)."""
    from leadcrm.directory.provisioning import add_membership, create_organization, create_user
    from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor, Role
    from leadcrm.pipelines.stages import default_new_stage
    from leadcrm.platform.db.engine import get_engine

    with get_engine().begin() as conn:
        organization_id = create_organization(conn, name)
        user_id = create_user(conn, auth_subject=str(uuid.uuid4()), email=f"owner-{uuid.uuid4().hex[:8]}@bench.local")
        membership_id = add_membership(conn, organization_id, user_id, Role.OWNER)
        placement = default_new_stage(conn, organization_id)
    actor = Actor(
        user_id=user_id,
        organization_id=organization_id,
        membership_id=membership_id,
        role=Role.OWNER,
        features=frozenset({LEAD_MANAGEMENT}),
    )
    return actor, placement


def _in_service(leads: int = IN_SERVICE_LEADS) -> None:
    """The fresh database as a database in service is: other organizations' leads, and statistics. On an empty
    database just analyzed (the migrations ANALYZE), the foreign-key checks that point at `leads` (status events,
    receipts, touches, tasks, attributions, threads…) are planned, once a connection, as scans of a table the
    statistics say is empty, and each check then reads the whole table as it grows: measured, 11,781 scans
    reading 22.7M rows in one 1,000-lead run, 30 → 110 µs a check. Autovacuum's ANALYZE puts that right in
    service; a bench of a minute would measure the artifact."""
    from sqlalchemy import text

    from leadcrm.platform.db.engine import dispose_engine, get_engine

    actor, placement = _organization("Bench other organizations")
    with get_engine().begin() as conn:
        conn.execute(
            text(
                "INSERT INTO leads (id, organization_id, name, email, phone, source, status, pipeline_id, stage_id) "
                "SELECT gen_random_uuid(), :org, 'Other ' || g, 'other' || g || '@bench.example', "
                "'+4470' || lpad(g::text, 8, '0'), 'facebook', 'new', :pipeline, :stage "
                "FROM generate_series(1, :leads) AS g"
            ),
            {"org": actor.organization_id, "pipeline": placement.pipeline_id, "stage": placement.stage_id,
             "leads": leads},
        )  # fmt: skip
    with get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        # Only what it filled: a table analyzed while empty (conversations, messages) would be planned as empty
        # by the foreign-key checks pointing at it, the artifact this removes for leads.
        conn.execute(text("ANALYZE leads"))
    dispose_engine()  # the product's next connection plans with the statistics


def _raw_connection() -> Any:
    """A bare pg8000 connection to the same database, for the baselines (no SQLAlchemy in the loop), outside
    the product's pool (of one connection, as in a Lambda)."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    from leadcrm.platform.db.engine import pg8000_url

    return create_engine(pg8000_url(os.environ["DATABASE_URL"]), poolclass=NullPool).raw_connection()


def _person(i: int, run: str) -> tuple[str, str, str]:
    return f"Person {i}", f"p{i}-{run}@bench.example", f"+4477{i:08d}"


def _raw_single_row_inserts(
    raw: Any, placement: Any, organization_id: uuid.UUID, rows: list[tuple[str, str, str]]
) -> float:
    """The baseline: each lead by a bare INSERT in its own transaction, on a pg8000 connection of its own."""
    from leadcrm.platform.ids import uuid7

    cursor = raw.cursor()
    started = time.perf_counter()
    for name, email, phone in rows:
        cursor.execute(
            "INSERT INTO leads (id, organization_id, name, email, phone, source, status, pipeline_id, stage_id) "
            "VALUES (%s, %s, %s, %s, %s, 'facebook', 'new', %s, %s)",
            (str(uuid7()), str(organization_id), name, email, phone, str(placement.pipeline_id),
             str(placement.stage_id)),
        )  # fmt: skip
        raw.commit()
    return time.perf_counter() - started


def _raw_multi_row_inserts(placement: Any, organization_id: uuid.UUID, rows: list[tuple[str, str, str]]) -> float:
    from leadcrm.platform.ids import uuid7

    raw = _raw_connection()
    try:
        cursor = raw.cursor()
        started = time.perf_counter()
        for start in range(0, len(rows), INSERT_ROWS_PER_STATEMENT):
            chunk = rows[start : start + INSERT_ROWS_PER_STATEMENT]
            values = ", ".join(["(%s, %s, %s, %s, %s, 'import', 'new', %s, %s)"] * len(chunk))
            params: list[str] = []
            for name, email, phone in chunk:
                params += [str(uuid7()), str(organization_id), name, email, phone, str(placement.pipeline_id),
                           str(placement.stage_id)]  # fmt: skip
            cursor.execute(
                "INSERT INTO leads (id, organization_id, name, email, phone, source, status, pipeline_id, stage_id) "
                f"VALUES {values}",
                params,
            )
        raw.commit()
        return time.perf_counter() - started
    finally:
        raw.close()


def _context(function_name: str) -> Any:
    from infra.local.lambdas import LocalContext

    return LocalContext(function_name=function_name, timeout_seconds=3600)


def _sqs_batches(bodies: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    from infra.local.pollers import sqs_event

    arn = "arn:aws:sqs:eu-west-1:123456789012:leadcrm-ingestion"
    for start in range(0, len(bodies), SQS_BATCH):
        messages = [
            {"MessageId": str(uuid.uuid4()), "ReceiptHandle": uuid.uuid4().hex, "Body": json.dumps(body)}
            for body in bodies[start : start + SQS_BATCH]
        ]
        yield sqs_event(arn, messages)


# --- Meta ------------------------------------------------------------------------------------------------


def bench_meta(count: int) -> dict[str, Any]:
    from leadcrm.ingestion.connections import connect
    from leadcrm.ingestion.rules.meta import LeadgenChange, fetched_lead_payload
    from leadcrm.platform.db.uow import UnitOfWork

    run = uuid.uuid4().hex[:8]
    actor, placement = _organization(f"Bench Meta {run}")
    page_id = str(uuid.uuid4().int)[:15]
    with UnitOfWork() as uow:
        connect(uow, actor, "meta_lead_ads", page_id, "bench-page-token", "Bench page")
    bodies = []
    people = [_person(i, run) for i in range(count)]
    for i, (name, email, phone) in enumerate(people):
        leadgen_id = f"{run}{i:09d}"
        lead = {
            "id": leadgen_id,
            "field_data": [
                {"name": "full_name", "values": [name]},
                {"name": "email", "values": [email]},
                {"name": "phone_number", "values": [phone]},
                {"name": "what_is_your_goal?", "values": ["Run a 10k"]},
            ],
            "form_id": f"form{i % 20}",
            "ad_id": f"ad{i % 50}",
            "campaign_name": f"Campaign {i % 20}",
            "platform": "ig" if i % 3 == 0 else "fb",
        }
        bodies.append({"kind": "meta.lead", "payload": fetched_lead_payload(LeadgenChange(page_id, leadgen_id), lead)})
    baseline_actor, baseline_placement = _organization(f"Bench Meta baseline {run}")
    timed = _interleaved(bodies, people, baseline_placement, baseline_actor.organization_id)
    created = _count_leads(actor.organization_id)
    whatsapp = _bench_whatsapp(count, run)
    return {**_figures(count, created, timed), "whatsapp": whatsapp}


@dataclass
class _Timed:
    handler_seconds: float = 0.0
    raw_seconds: float = 0.0
    failures: int = 0


def _interleaved(
    bodies: list[dict[str, Any]], people: list[tuple[str, str, str]], placement: Any, organization_id: uuid.UUID
) -> _Timed:
    """Each SQS batch through the handler, then the same people by the raw single-row INSERT loop: the two
    take turns batch by batch, so both see the same load on this shared machine."""
    from ingestion.handler import lambda_handler

    timed = _Timed()
    raw = _raw_connection()
    try:
        for start, event in zip(range(0, len(bodies), SQS_BATCH), _sqs_batches(bodies), strict=True):
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):  # the metrics documents (EMF) the handler prints
                timed.failures += len(lambda_handler(event, _context("ingestion"))["batchItemFailures"])
            timed.handler_seconds += time.perf_counter() - started
            timed.raw_seconds += _raw_single_row_inserts(
                raw, placement, organization_id, people[start : start + SQS_BATCH]
            )
    finally:
        raw.close()
    return timed


def _figures(count: int, created: int, timed: _Timed) -> dict[str, Any]:
    return {
        "leads": count,
        "created": created,
        "failedMessages": timed.failures,
        "handlerSeconds": round(timed.handler_seconds, 2),
        "handlerLeadsPerSecond": round(count / timed.handler_seconds, 1),
        "rawSingleRowInsertSeconds": round(timed.raw_seconds, 2),
        "rawLeadsPerSecond": round(count / timed.raw_seconds, 1),
        "ratio": round(timed.raw_seconds / timed.handler_seconds, 3),
        "target": META_RATIO_TARGET,
    }


def _bench_whatsapp(count: int, run: str) -> dict[str, Any]:
    """The same people as click-to-WhatsApp messages (one `whatsapp` webhook each, SQS batches of 10) through
    the same handler, taking turns with the same raw loop (the target applies to both)."""
    from leadcrm.ingestion.connections import connect
    from leadcrm.platform.db.uow import UnitOfWork

    actor, _ = _organization(f"Bench WhatsApp {run}")
    phone_number_id = str(uuid.uuid4().int)[:15]
    with UnitOfWork() as uow:
        connect(uow, actor, "whatsapp_cloud", phone_number_id, "bench-waba-token", "Bench number")
    bodies = []
    for i in range(count):
        message = {
            "from": f"4478{i:08d}",
            "id": f"wamid.{run}{i:09d}",
            "timestamp": "1767225600",
            "type": "text",
            "text": {"body": "Hi, I saw your ad"},
            "referral": {"source_id": f"ad{i % 50}", "source_type": "ad", "headline": f"Ad {i % 50}",
                         "ctwa_clid": f"clid{run}{i:09d}"},
        }  # fmt: skip
        value = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_number_id},
            "contacts": [{"profile": {"name": f"Person {i}"}, "wa_id": message["from"]}],
            "messages": [message],
        }
        payload = {
            "object": "whatsapp_business_account",
            "entry": [{"id": "1", "changes": [{"field": "messages", "value": value}]}],
        }
        bodies.append({"kind": "whatsapp", "receivedAt": "2026-01-01T10:00:00+00:00", "payload": payload})
    people = [_person(i, f"wa{run}") for i in range(count)]
    baseline_actor, baseline_placement = _organization(f"Bench WhatsApp baseline {run}")
    timed = _interleaved(bodies, people, baseline_placement, baseline_actor.organization_id)
    return _figures(count, _count_leads(actor.organization_id), timed)


def _count_leads(organization_id: uuid.UUID) -> int:
    from sqlalchemy import func, select

    from leadcrm.leads.tables import leads
    from leadcrm.platform.db.engine import get_engine

    with get_engine().connect() as conn:
        return conn.execute(
            select(func.count()).select_from(leads).where(leads.c.organization_id == organization_id)
        ).scalar_one()


# --- CSV (in a process of its own) -----------------------------------------------------------------------


def bench_csv(rows: int) -> dict[str, Any]:
    from ingestion.handler import lambda_handler
    from leadcrm.ingestion.csv_import import create_import, start_import
    from leadcrm.ingestion.queries import get_import
    from leadcrm.platform.adapters.aws import client
    from leadcrm.platform.db.uow import UnitOfWork

    run = uuid.uuid4().hex[:8]
    s3, sqs = client("s3"), client("sqs")
    s3.create_bucket(Bucket="bench-imports", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    os.environ["LEAD_IMPORTS_BUCKET"] = "bench-imports"
    os.environ["INGESTION_QUEUE_URL"] = sqs.create_queue(QueueName="bench-ingestion")["QueueUrl"]
    # The bus the job's `lead_import.completed` goes to, as the stack (and the Meta scenario) has it: without
    # it the publish fails and the timed import took moto's error path (~0.2 s, a quarter of a 10k gap).
    client("events").create_event_bus(Name="leadcrm-events")
    from leadcrm.platform.config import get_settings

    get_settings.cache_clear()
    actor, _ = _organization(f"Bench CSV {run}")
    people = [_person(i, run) for i in range(rows)]
    content = "Name,Email,Phone,Notes\n" + "".join(f"{n},{e},{p},imported\n" for n, e, p in people)
    with UnitOfWork() as uow:
        job = create_import(uow, actor, file_name="bench.csv", column_mapping=None).job
    key = f"imports/{actor.organization_id}/{job['id']}.csv"
    s3.put_object(Bucket="bench-imports", Key=key, Body=content.encode())
    del content
    with UnitOfWork() as uow:
        start_import(uow, actor, job["id"])
    messages = sqs.receive_message(QueueUrl=os.environ["INGESTION_QUEUE_URL"], MaxNumberOfMessages=1)["Messages"]
    rss_before_mb = _rss_mb("VmRSS")
    _reset_peak_rss()  # building the file for moto peaked higher than the import does: measure the import
    started = time.perf_counter()
    result = lambda_handler(next(_sqs_batches([json.loads(messages[0]["Body"])])), _context("ingestion"))
    import_seconds = time.perf_counter() - started
    peak_rss_mb = _rss_mb("VmHWM")
    with UnitOfWork() as uow:
        finished = get_import(uow.connection, actor.organization_id, job["id"])
    baseline_actor, baseline_placement = _organization(f"Bench CSV baseline {run}")
    raw_seconds = _raw_multi_row_inserts(baseline_placement, baseline_actor.organization_id, people)
    return {
        "rows": rows,
        "status": finished["status"],
        "created": finished["created_count"],
        "failedMessages": len(result["batchItemFailures"]),
        "importSeconds": round(import_seconds, 2),
        "importRowsPerSecond": round(rows / import_seconds, 1),
        "rawMultiRowInsertSeconds": round(raw_seconds, 2),
        "rawRowsPerSecond": round(rows / raw_seconds, 1),
        "ratio": round(raw_seconds / import_seconds, 3),
        "target": CSV_RATIO_TARGET,
        "peakRssMb": round(peak_rss_mb, 1),  # the process's peak while the import ran (moto and the file included)
        "rssBeforeImportMb": round(rss_before_mb, 1),
        "rssTargetMb": CSV_RSS_TARGET_MB,
    }


def _rss_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (the peak since the last reset) of this process, in MB; the lifetime peak from
    getrusage where /proc is not there."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak_rss() -> None:
    """Linux: writing 5 to clear_refs resets VmHWM to the current RSS."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _child_csv(url: str, rows: int) -> None:
    from moto import mock_aws

    _point_the_product_at(url)
    with mock_aws():
        print("RESULT " + json.dumps(bench_csv(rows)), flush=True)


def _sizes(name: str, default: str) -> list[int]:
    return [int(size) for size in os.environ.get(name, default).split(",") if size]


def _csv_in_child(url: str, rows: int) -> dict[str, Any]:
    child = subprocess.run(
        [sys.executable, "-m", "bench.ingestion", "--csv-child", url, str(rows)],
        capture_output=True,
        text=True,
        check=False,
    )
    found = [line for line in child.stdout.splitlines() if line.startswith("RESULT ")]
    if child.returncode != 0 or not found:
        raise RuntimeError(f"the CSV import bench failed:\n{child.stdout[-2000:]}{child.stderr[-4000:]}")
    return json.loads(found[-1].removeprefix("RESULT "))


def measure_ingestion(url: str, *, meta_sizes: list[int], csv_sizes: list[int]) -> dict[str, Any]:
    """Every size of both paths on the database at `url` (this process points the product at it)."""
    from moto import mock_aws

    _point_the_product_at(url)
    from leadcrm.platform.db.migrate import upgrade

    upgrade()
    _in_service()
    meta = []
    for count in meta_sizes:
        log(f"meta: {count:,} Lead Ads leads through the ingestion handler …")
        with mock_aws():
            from leadcrm.platform.adapters.aws import client

            client("events").create_event_bus(Name="leadcrm-events")
            meta.append(bench_meta(count))
        log(json.dumps(meta[-1]))
    csv = []
    for rows in csv_sizes:
        log(f"csv: a {rows:,} row import through the ingestion handler (own process) …")
        csv.append(_csv_in_child(url, rows))
        log(json.dumps(csv[-1]))
    return {"meta": meta, "csv": csv}


def report_lines(section: dict[str, Any]) -> list[str]:
    lines = ["", "Ingestion vs raw INSERTs of the same leads on the same database, same run"]
    for meta in section["meta"]:
        lines.append(
            f"Meta  {meta['leads']:>7,} leads  handler {meta['handlerLeadsPerSecond']:>8,.0f}/s  raw single-row "
            f"INSERT {meta['rawLeadsPerSecond']:>8,.0f}/s  ratio {meta['ratio']:.0%} "
            f"(target >= {META_RATIO_TARGET:.0%})"
        )
        if "whatsapp" in meta:
            whatsapp = meta["whatsapp"]
            lines.append(
                f"WhatsApp {whatsapp['leads']:>4,} leads  handler {whatsapp['handlerLeadsPerSecond']:>8,.0f}/s  raw "
                f"single-row INSERT {whatsapp['rawLeadsPerSecond']:>8,.0f}/s  ratio {whatsapp['ratio']:.0%}"
            )
    for csv in section["csv"]:
        lines.append(
            f"CSV   {csv['rows']:>7,} rows   import  {csv['importRowsPerSecond']:>8,.0f}/s  raw multi-row INSERT  "
            f"{csv['rawRowsPerSecond']:>8,.0f}/s  ratio {csv['ratio']:.0%} (target >= {CSV_RATIO_TARGET:.0%}); "
            f"peak RSS {csv['peakRssMb']:.0f} MB (target <= {CSV_RSS_TARGET_MB} MB)"
        )
    return lines


def measure_in_child(server_url: str, quick: bool) -> dict[str, Any]:
    """`make bench`'s ingestion scenario: this module in a process of its own (it points the product at its own
    database, `leadcrm_bench_ingestion` on the bench cluster, which the rest of the bench must not see)."""
    env = {**os.environ}
    if quick:
        env.setdefault("BENCH_META_LEADS", "300,1000")
        env.setdefault("BENCH_CSV_ROWS", "1000,10000")
    child = subprocess.run(
        [sys.executable, "-m", "bench.ingestion", "--scenario", server_url], env=env, text=True,
        stdout=subprocess.PIPE, check=False,
    )  # fmt: skip
    found = [line for line in child.stdout.splitlines() if line.startswith("RESULT ")]
    if child.returncode != 0 or not found:
        raise RuntimeError(f"the ingestion bench failed:\n{child.stdout[-4000:]}")
    return json.loads(found[-1].removeprefix("RESULT "))


def _scenario_child(server_url: str) -> None:
    from bench.database import fresh_sibling_database

    url = fresh_sibling_database(server_url, "leadcrm_bench_ingestion")
    section = measure_ingestion(
        url, meta_sizes=_sizes("BENCH_META_LEADS", "1000,10000"), csv_sizes=_sizes("BENCH_CSV_ROWS", "10000,100000")
    )
    print("RESULT " + json.dumps(section), flush=True)


def main() -> int:
    from bench.database import bench_database

    with bench_database("ingestion", log) as url:
        results = measure_ingestion(
            url, meta_sizes=_sizes("BENCH_META_LEADS", "10000"), csv_sizes=_sizes("BENCH_CSV_ROWS", "100000")
        )
    RESULTS.write_text(json.dumps(results, indent=2))
    log("\n".join(report_lines(results)))
    log(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--csv-child":
        _child_csv(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--scenario":
        _scenario_child(sys.argv[2])
    else:
        sys.exit(main())
