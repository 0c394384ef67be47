"""Cold-start cost: how long importing each function's handler takes in a fresh interpreter.

Each import runs in a new `python` process (nothing cached in memory; .pyc files as Lambda would have them
after the first run, so the first, compiling, run is discarded), several times, the rows interleaved so
that a busy moment of the machine falls on every row alike. The median is reported with its ratio to the
baseline measured the same way in the same run: a bare Powertools `APIGatewayHttpResolver` with SQLAlchemy
and pg8000 imported, the least any database function of ours could cost on this machine.

The API function imports no route module at load (api.routing): its first request imports the one that
declares its route. So it has two rows: the import alone, and the import plus what the first GET of a lead
loads. Beside them, the alternative of one function per capability behind the same HTTP API: that
function's handler would import its capability's route modules at load (here: the API's frame plus every
module of functions/api/leads/, which holds GET lead), so its import is its cold start, GET lead included.
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
BASELINE = "baseline: bare resolver + sqlalchemy + pg8000"
LEAD_PATH = "/organizations/0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11/leads/0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a12"
API_FIRST_GET_LEAD = "api: import + first GET lead's routes"
API_PER_CAPABILITY = "api per capability (leads): import"
# name → the statement a cold start runs (Lambda imports the handler module, then calls lambda_handler)
IMPORTS = {
    BASELINE: "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; APIGatewayHttpResolver(); "
    "import sqlalchemy, pg8000",
    "bare resolver alone": "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; "
    "APIGatewayHttpResolver()",
    "api": "import api.handler",
    API_FIRST_GET_LEAD: f"import api.handler as h; h.app.include_routes_for('GET', '{LEAD_PATH}')",
    API_PER_CAPABILITY: "import api.handler as h; "
    "h.app.include_modules([m for m in h.ROUTE_MODULES if m.startswith('api.leads.')])",
    "webhooks": "import webhooks.handler",
    "ingestion": "import ingestion.handler",
    "graph_fetch": "import graph_fetch.handler",
    "task_lifecycle": "import task_lifecycle.handler",
    "migrations": "import migrations.handler",
    "admin": "import admin.handler",
}
PROBE = "import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"


def _once(statement: str, root: Path) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root / "functions"), str(root / "layers" / "core" / "python")]),
        "AWS_REGION": os.environ.get("AWS_REGION", "eu-west-1"),
        "POWERTOOLS_SERVICE_NAME": "leadcrm",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
        check=True,
    )
    return float(result.stdout.strip().splitlines()[-1]) * 1000


def measure_imports(runs: int = RUNS, root: Path = REPO, imports: dict[str, str] | None = None) -> dict[str, Any]:
    """Median and min of `runs` fresh imports of each statement (the checkout at `root`), with its ratio to
    the baseline's median of the same run."""
    statements = {BASELINE: IMPORTS[BASELINE], **(imports if imports is not None else IMPORTS)}
    for statement in statements.values():
        _once(statement, root)  # compiles .pyc: Lambda's deployment does not pay for that on every cold start
    samples: dict[str, list[float]] = {name: [] for name in statements}
    for _ in range(runs):
        for name, statement in statements.items():
            samples[name].append(_once(statement, root))
    rows = {
        name: {"median_ms": round(statistics.median(values), 1), "min_ms": round(min(values), 1)}
        for name, values in samples.items()
    }
    base = rows[BASELINE]["median_ms"]
    for row in rows.values():
        row["vsBaseline"] = round(row["median_ms"] / base, 2)
    return {"runs": runs, "baseline": BASELINE, "functions": rows}


def report_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"Handler import time, fresh interpreter, median of {results['runs']} (ms; ×base = over the baseline)",
        f"{'function':<42} {'median':>8} {'min':>8} {'×base':>7}",
    ]
    for name, row in results["functions"].items():
        lines.append(f"{name:<42} {row['median_ms']:8.1f} {row['min_ms']:8.1f} {row['vsBaseline']:7.2f}")
    return lines
