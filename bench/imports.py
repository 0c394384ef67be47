"""Cold-start cost: how long importing each function's handler takes in a fresh interpreter.

Each import runs in a new `python` process (nothing cached in memory; .pyc files as Lambda would have them
after the first run, so the first, compiling, run is discarded), several times; the median is reported with
its ratio to a bare Powertools `APIGatewayHttpResolver` import measured the same way in the same run: the
least any HTTP function of ours could cost on this machine.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RUNS = 7
BASELINE = "powertools resolver (bare)"
# name → the statement a cold start runs (Lambda imports the handler module, then calls lambda_handler)
IMPORTS = {
    BASELINE: "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; APIGatewayHttpResolver()",
    "api": "import api.handler",
    "webhooks": "import webhooks.handler",
    "ingestion": "import ingestion.handler",
    "task_lifecycle": "import task_lifecycle.handler",
    "migrations": "import migrations.handler",
}
PROBE = "import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"


def _once(statement: str) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "functions"), str(REPO / "layers" / "core" / "python")]),
        "AWS_REGION": os.environ.get("AWS_REGION", "eu-west-1"),
        "POWERTOOLS_SERVICE_NAME": "leadcrm",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    return float(result.stdout.strip().splitlines()[-1]) * 1000


def measure_imports(runs: int = RUNS) -> dict[str, Any]:
    rows = {}
    for name, statement in IMPORTS.items():
        _once(statement)  # compiles .pyc: Lambda's deployment does not pay for that on every cold start
        samples = [_once(statement) for _ in range(runs)]
        rows[name] = {"median_ms": round(statistics.median(samples), 1), "min_ms": round(min(samples), 1)}
    base = rows[BASELINE]["median_ms"]
    for row in rows.values():
        row["vsBaseline"] = round(row["median_ms"] / base, 2)
    return {"runs": runs, "functions": rows}


def report_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"Handler import time, fresh interpreter, median of {results['runs']} (ms; ×base = over the bare resolver)",
        f"{'function':<30} {'median':>8} {'min':>8} {'×base':>7}",
    ]
    for name, row in results["functions"].items():
        lines.append(f"{name:<30} {row['median_ms']:8.1f} {row['min_ms']:8.1f} {row['vsBaseline']:7.2f}")
    return lines
