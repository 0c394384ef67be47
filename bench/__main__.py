"""`make bench` (python -m bench): seed once, then run every scenario of SCENARIOS and write
bench/results.json and bench/RESULTS.md (the printed tables).

BENCH_QUICK=1 runs the small scale (100k leads, 10k in the big organization) to iterate quickly.
BENCH_REQUESTS (default 200) sets the measured requests per shape; BENCH_ONLY=imports,statements runs only
those scenarios. See bench/README.md.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from bench import analytics, api_load, bulk_moves, imports, ingestion, intake, reports_rollups, statements, targets
from bench.attention import measure_attention, report_lines, seed_attention
from bench.database import bench_database
from bench.measure import Latency
from bench.scenarios import (
    BigOrg,
    list_shapes,
    load_big_org,
    measure_baseline,
    measure_detail,
    measure_handler_detail,
    measure_handler_list,
    measure_list_shape,
    plan_summary,
)
from bench.seed import FULL, QUICK, Scale, fold_rollups, seed, vacuum
from leadcrm.platform.db.engine import get_engine, pg8000_url

RESULTS = Path(__file__).with_name("results.json")
RESULTS_TABLE = Path(__file__).with_name("RESULTS.md")
LIST_P95_TARGET_MS = 20.0


def log(message: str) -> None:
    print(message, flush=True)


def _point_the_product_at(url: str) -> None:
    """The product's own engine and settings read DATABASE_URL: the services run exactly as in Lambda."""
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine

    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("AWS_REGION", "eu-west-1")
    os.environ.setdefault("EVENT_BUS_NAME", "leadcrm-events")  # the bus the scenarios create in moto
    get_settings.cache_clear()
    dispose_engine()


@dataclass(frozen=True)
class Context:
    """What a scenario gets: the bench database's URL (the product already points at it), the big
    organization's ids, the scale and how many requests to measure per shape."""

    url: str
    org: BigOrg
    scale: Scale
    requests: int
    warmup: int = 20


@dataclass(frozen=True)
class Scenario:
    """One benchmark: `run(context)` returns its section of results.json; `report(section)` its table lines."""

    name: str
    run: Callable[[Context], dict[str, Any]]
    report: Callable[[dict[str, Any]], list[str]]


def measure_leads(ctx: Context) -> dict[str, Any]:
    """Lead list shapes, work queue and urgent counts, detail (bench/scenarios.py, attention.py)."""
    org, requests, warmup = ctx.org, ctx.requests, ctx.warmup
    log(f"\nmeasuring: {requests} requests per shape after {warmup} warm-up requests")
    baseline = measure_baseline(org, requests=requests, warmup=warmup)
    shapes = list_shapes(org)
    list_rows: list[tuple[str, Latency, dict[str, Any]]] = []
    with get_engine().connect() as conn:
        plans = {shape.name: plan_summary(conn, shape) for shape in shapes}
    for shape in shapes:
        latency = measure_list_shape(shape, requests=requests, warmup=warmup)
        list_rows.append((shape.name, latency, plans[shape.name]))
        log(f"  list {shape.name:<48} p95 {latency.p95:7.2f} ms")
    attention = measure_attention(org.owner, org.coach, requests=requests, warmup=warmup, log=log)
    handler_shape = shapes[0]
    handler_list = measure_handler_list(org, handler_shape, requests=requests, warmup=warmup)
    detail = measure_detail(org, requests=requests, warmup=warmup)
    handler_detail = measure_handler_detail(org, requests=requests, warmup=warmup)
    vacuum_engine = create_engine(pg8000_url(ctx.url), poolclass=NullPool)
    try:
        vacuum(vacuum_engine, log)  # the rolled-back moves left dead rows behind
    finally:
        vacuum_engine.dispose()
    results: dict[str, Any] = {
        "requestsPerShape": requests,
        "targets": {"listP95Ms": LIST_P95_TARGET_MS},
        "baseline": {"name": "bare SELECT … ORDER BY id DESC LIMIT 50", **baseline.as_dict()},
        "list": [
            {
                "shape": name,
                **latency.as_dict(),
                "p50VsBaseline": round(latency.p50 / baseline.p50, 2),
                "meetsTarget": latency.p95 <= LIST_P95_TARGET_MS,
                "plan": plan,
            }
            for name, latency, plan in list_rows
        ],
        "attention": attention,
        "listThroughHandler": {"shape": handler_shape.name, **handler_list.as_dict()},
        "detail": detail.as_dict(),
        "detailThroughHandler": handler_detail.as_dict(),
        "scale": {"totalLeads": ctx.scale.total_leads, "bigOrgLeads": ctx.scale.big_org_leads},
    }
    return results


REPORT_REQUESTS = 50  # each source-rows baseline walks the big organization's history: ~0.5 s a call

# Every benchmark `make bench` runs, in order. Another area plugs its own in with one row.
SCENARIOS: list[Scenario] = [
    Scenario("imports", lambda ctx: imports.measure_imports(), imports.report_lines),
    Scenario("statements", lambda ctx: statements.measure_statements(), statements.report_lines),
    Scenario("leads", measure_leads, lambda section: _leads_report(section)),
    Scenario(
        "bulkMove",
        lambda ctx: bulk_moves.measure_bulk_moves(ctx.url, ctx.org, ctx.scale.big_org_leads, log),
        bulk_moves.report_lines,
    ),
    Scenario(
        "reports",
        lambda ctx: reports_rollups.measure_reports(ctx.org.owner, requests=REPORT_REQUESTS, warmup=3),
        reports_rollups.report_lines,
    ),
    Scenario(
        "ingestion", lambda ctx: ingestion.measure_in_child(ctx.url, ctx.scale.name == "quick"), ingestion.report_lines
    ),  # fmt: skip
    Scenario("intake", lambda ctx: intake.measure_intake(), intake.report_lines),
    Scenario("apiLoad", lambda ctx: api_load.measure_api_load(ctx.url, ctx.org, log), api_load.report_lines),
    Scenario(
        "analytics",
        lambda ctx: analytics.analytics_bench(ctx.url, ctx.org.id, requests=ctx.requests, warmup=ctx.warmup, log=log),
        analytics.report_lines,
    ),
]


def main() -> int:
    quick = os.environ.get("BENCH_QUICK", "") not in ("", "0")
    scale = QUICK if quick else FULL
    requests = max(200, int(os.environ.get("BENCH_REQUESTS", "200")))
    only = {name for name in os.environ.get("BENCH_ONLY", "").split(",") if name}
    unknown = only - {scenario.name for scenario in SCENARIOS}
    if unknown:
        raise SystemExit(f"BENCH_ONLY names no scenario: {sorted(unknown)}; known: {[s.name for s in SCENARIOS]}")
    log(f"bench: scale {scale.name} ({scale.total_leads:,} leads, {scale.big_org_leads:,} in the big organization)")
    with bench_database(scale.name, log) as url:
        _point_the_product_at(url)
        from leadcrm.platform.db.migrate import upgrade

        migrate_started = time.perf_counter()
        upgrade()
        log(f"migrate: {time.perf_counter() - migrate_started:.1f} s")
        seed_engine = create_engine(pg8000_url(url), poolclass=NullPool)
        try:
            seeded = seed(seed_engine, scale, log)
            seed_attention(seed_engine, seeded.big_org_id, log)
            fold_rollups(seed_engine, log)
            vacuum(seed_engine, log)
        finally:
            seed_engine.dispose()
        ctx = Context(url=url, org=load_big_org(seeded.big_org_id), scale=scale, requests=requests)

        results: dict[str, Any] = {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
            "scale": {"name": scale.name, "totalLeads": seeded.total_leads, "bigOrgLeads": scale.big_org_leads},
            "seed": {"seconds": round(seeded.seconds, 1), "reused": seeded.reused},
        }
        lines = [
            f"LeadCRM bench, {results['when']}, scale {scale.name}: {seeded.total_leads:,} leads "
            f"({scale.big_org_leads:,} in the big organization), {os.cpu_count()} CPUs; "
            f"seed {seeded.seconds:.1f} s{' (reused)' if seeded.reused else ''}"
        ]
        for scenario in SCENARIOS:
            if only and scenario.name not in only:
                continue
            log(f"\n== {scenario.name}")
            # The objects of the seed and of earlier scenarios stay alive in this process, which no Lambda holds:
            # out of the collector's reach, or a full garbage collection during a measured call scans them all
            # (300 ms pauses in the attribution report's p95 of the full run, 245 ms p95 against 138 ms alone).
            gc.collect()
            gc.freeze()
            started = time.perf_counter()
            results[scenario.name] = scenario.run(ctx)
            results[scenario.name]["seconds"] = round(time.perf_counter() - started, 1)
            lines += scenario.report(results[scenario.name])
        results["oneRequest"] = targets.one_request_figures(results)
        results["bulkWork"] = targets.bulk_work_figures(results)
        lines[1:1] = [
            *targets.report_lines(results["oneRequest"], "Issue 22, one request: each figure beside its baseline"),
            *targets.report_lines(results["bulkWork"], "Issue 23, bulk work: each figure beside its baseline"),
        ]
        table = "\n".join(lines)
        log("\n" + table)
        RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
        heading = f"# Bench results\n\n`make bench` of {results['when']} (bench/results.json has every figure).\n"
        RESULTS_TABLE.write_text(f"{heading}\n```\n{table}\n```\n")
        log(f"\nwrote {RESULTS} and {RESULTS_TABLE}")
    if results.get("apiLoad", {}).get("zeroServerErrors") is False:
        log("the API answered 5xx under load: see the apiLoad statuses")
        return 1
    return 0


def _leads_report(results: dict[str, Any]) -> list[str]:
    base = results["baseline"]
    lines = [
        "",
        f"Lead list on the big organization ({results['scale']['bigOrgLeads']:,} of "
        f"{results['scale']['totalLeads']:,} leads), {results['requestsPerShape']} requests each, milliseconds",
        f"{'shape':<50} {'p50':>7} {'p95':>7} {'p99':>7} {'×base':>6}  {'≤20ms':<5}  indexes on leads",
        f"{'baseline: ' + base['name']:<50} {base['p50_ms']:7.2f} {base['p95_ms']:7.2f} {base['p99_ms']:7.2f} {1:6.2f}",
    ]
    for row in results["list"]:
        plan = row["plan"]
        indexes = ", ".join(plan["indexes"]) + ("  SEQ SCAN!" if plan["seqScanOnLeads"] else "")
        lines.append(
            f"{row['shape']:<50} {row['p50_ms']:7.2f} {row['p95_ms']:7.2f} {row['p99_ms']:7.2f} "
            f"{row['p50VsBaseline']:6.2f}  {'yes' if row['meetsTarget'] else 'NO':<5}  {indexes}"
        )
    handler = results["listThroughHandler"]
    detail, handler_detail = results["detail"], results["detailThroughHandler"]
    lines += [
        "",
        f"{'list through lambda_handler (' + handler['shape'] + ')':<50} {handler['p50_ms']:7.2f} "
        f"{handler['p95_ms']:7.2f} {handler['p99_ms']:7.2f}",
        f"{'detail GET (service)':<50} {detail['p50_ms']:7.2f} {detail['p95_ms']:7.2f} {detail['p99_ms']:7.2f}",
        f"{'detail GET through lambda_handler':<50} {handler_detail['p50_ms']:7.2f} "
        f"{handler_detail['p95_ms']:7.2f} {handler_detail['p99_ms']:7.2f}",
        "",
    ]
    if "attention" in results:
        lines += report_lines(results["attention"])
    return lines


if __name__ == "__main__":
    sys.exit(main())
