"""The bulk stage move (issue 23): `bulk_move_stage` of 1,000 and 10,000 leads of the big organization beside
its baseline, one bare set-based UPDATE of the same rows, measured interleaved in the same run.

The move is timed with its outbox rows written (what its commit adds), inside its unit of work, and rolled back,
so every run starts from the seed; the baseline's transaction is rolled back too. The dead rows both leave are
vacuumed at the end. Target: the move at most 1.5x its baseline.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from bench.scenarios import BigOrg
from bench.seed import vacuum
from leadcrm.platform.db.engine import get_engine, pg8000_url
from leadcrm.platform.db.uow import UnitOfWork

SIZES = (1_000, 10_000)
RUNS = 5
RATIO_TARGET = 1.5


def measure_bulk_moves(url: str, org: BigOrg, big_org_leads: int, log: Any = print) -> dict[str, Any]:
    sizes = [min(size, big_org_leads // 2) for size in SIZES]
    runs = []
    for size in dict.fromkeys(sizes):
        log(f"  bulk move of {size:,} leads, {RUNS} runs beside the bare UPDATE …")
        run = measure_bulk_move(org, size=size, runs=RUNS)
        move, bare = statistics.median(run.seconds), statistics.median(run.baseline_seconds)
        runs.append(
            {
                "leads": run.requested,
                "moved": run.moved,
                "skipped": run.skipped,
                "medianSeconds": round(move, 3),
                "minSeconds": round(min(run.seconds), 3),
                "bareUpdateMedianSeconds": round(bare, 3),
                "ratio": round(move / bare, 2),
                "target": RATIO_TARGET,
                "meetsTarget": move / bare <= RATIO_TARGET,
            }
        )
    engine = create_engine(pg8000_url(url), poolclass=NullPool)
    try:
        vacuum(engine, log)  # the rolled-back moves left dead rows behind
    finally:
        engine.dispose()
    return {"runs": runs}


def report_lines(section: dict[str, Any]) -> list[str]:
    lines = ["", "Bulk stage move vs a bare UPDATE of the same rows (median of runs, rolled back; seconds)"]
    lines.append(f"{'leads':>8} {'move':>8} {'bare':>8} {'ratio':>7}  target ≤ {RATIO_TARGET}×")
    for run in section["runs"]:
        lines.append(
            f"{run['leads']:>8,} {run['medianSeconds']:>8.3f} {run['bareUpdateMedianSeconds']:>8.3f} "
            f"{run['ratio']:>6.2f}×  {'yes' if run['meetsTarget'] else 'NO'}"
            f"  (moved {run['moved']:,}, skipped {run['skipped']:,})"
        )
    return lines


@dataclass(frozen=True)
class BulkMoveRun:
    seconds: list[float]
    baseline_seconds: list[float]
    requested: int
    moved: int
    skipped: int


# The baseline: the same rows moved by one bare UPDATE (what the leads table and its indexes cost by themselves).
BARE_BULK_UPDATE = text(
    "UPDATE leads SET stage_id = :stage, status = (SELECT category FROM pipeline_stages WHERE id = :stage), "
    "status_changed_at = now(), updated_at = now() "
    "WHERE organization_id = :o AND id = ANY(CAST(:ids AS uuid[]))"
)


def measure_bulk_move(org: BigOrg, *, size: int, runs: int) -> BulkMoveRun:
    """bulk_move_stage of `size` leads of the Sales pipeline (primary or secondary placements) to Callback, its
    outbox rows written, timed inside its unit of work and rolled back (never committed) so every run starts
    from the seed; interleaved with the baseline, a bare UPDATE of the same rows, also rolled back."""
    from leadcrm.leads.bulk_moves import bulk_move_stage

    target = org.stage_ids["callback"]
    with get_engine().connect() as conn:
        lead_ids = [
            row[0]
            for row in conn.execute(
                text(
                    "SELECT id FROM leads l WHERE organization_id = :o AND archived_at IS NULL AND "
                    "(pipeline_id = :p OR EXISTS (SELECT 1 FROM lead_pipeline_placements pp "
                    " WHERE pp.lead_id = l.id AND pp.pipeline_id = :p)) "
                    "ORDER BY md5(id::text) LIMIT :n"
                ),
                {"o": org.id, "p": org.sales_pipeline_id, "n": size},
            )
        ]
    seconds: list[float] = []
    baseline: list[float] = []
    moved = skipped = 0
    id_array = "{" + ",".join(str(i) for i in lead_ids) + "}"
    for _ in range(runs):
        with get_engine().connect() as conn, conn.begin() as transaction:
            started = time.perf_counter()
            conn.execute(BARE_BULK_UPDATE, {"stage": target, "o": org.id, "ids": id_array})
            baseline.append(time.perf_counter() - started)
            transaction.rollback()
        with UnitOfWork() as uow:
            started = time.perf_counter()
            result = bulk_move_stage(uow, org.owner, target, lead_ids)
            uow.flush_events()
            seconds.append(time.perf_counter() - started)
            moved, skipped = len(result.moved), len(result.skipped)
            # leaving without commit rolls the move back
    return BulkMoveRun(
        seconds=seconds, baseline_seconds=baseline, requested=len(lead_ids), moved=moved, skipped=skipped
    )
