"""The figures of issue 22's table (one request) and of issue 23's (bulk work), gathered from the scenarios'
sections into two lists at the head of bench/results.json (`oneRequest`, `bulkWork`) and printed first: each
figure with the baseline measured in the same run, their ratio where the target is one, the target, and whether
it is met. A figure whose scenario did not run (BENCH_ONLY) is left out.
"""

from __future__ import annotations

from typing import Any

IMPORT_TARGET = 1.5  # × the bare resolver + sqlalchemy + pg8000 import


def _figure(
    name: str,
    value: float,
    unit: str,
    target: str,
    meets: bool,
    baseline: float | None = None,
    ratio: float | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {"figure": name, "value": round(value, 2), "unit": unit}
    if baseline is not None:
        row["baseline"] = round(baseline, 2)
    if ratio is not None:
        row["ratio"] = round(ratio, 2)
    return {**row, "target": target, "meets": meets}


def _imports(section: dict[str, Any]) -> list[dict[str, Any]]:
    functions = section["functions"]
    base = functions[section["baseline"]]["median_ms"]
    rows = []
    for name in ("api", "api: import + first GET lead's routes"):
        if name in functions:
            value = functions[name]["median_ms"]
            rows.append(
                _figure(
                    f"import: {name}",
                    value,
                    "ms",
                    f"≤ {IMPORT_TARGET}× base",
                    value / base <= IMPORT_TARGET,
                    base,
                    value / base,
                )
            )
    return rows


def _statements(section: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        _figure(
            f"round trips: {row['route']}", row["statements"], "statements", f"≤ {row['budget']}", row["meetsTarget"]
        )
        for row in section["routes"]
    ]


def _attention(section: dict[str, Any]) -> list[dict[str, Any]]:
    base = section["baseline"]["p95_ms"]
    return [
        _figure(
            f"p95: {row['shape']}",
            row["p95_ms"],
            "ms",
            "≤ 1.5× base (bare indexed SELECT)",
            row["meetsTarget"],
            base,
            row["p95VsBaseline"],
        )
        for row in (*section["queue"], *section["urgent"])
    ]


def _api_load(section: dict[str, Any]) -> list[dict[str, Any]]:
    one, meets, targets = section["oneClient"], section["meetsTargets"], section["targets"]
    in_process = section["baselines"]["handlerInProcess"]
    burst = section["burst"]
    return [
        _figure(
            "local GET, one client, p50",
            one["p50_ms"],
            "ms",
            f"≤ {targets['oneClientP50Ms']:.0f} ms",
            meets["oneClientP50"],
            in_process["p50_ms"],
            one["p50_ms"] / in_process["p50_ms"],
        ),
        _figure(
            "local GET, one client, p99",
            one["p99_ms"],
            "ms",
            f"≤ {targets['oneClientP99Ms']:.0f} ms",
            meets["oneClientP99"],
            in_process["p99_ms"],
            one["p99_ms"] / in_process["p99_ms"],
        ),
        _figure(
            f"local GET, {section['clients']} clients, p50",
            section["get"]["p50_ms"],
            "ms",
            f"≤ {targets['concurrentP50Ratio']:.0f}× the one-client p50",
            meets["concurrentP50Ratio"],
            one["p50_ms"],
            section["concurrentP50Ratio"],
        ),
        _figure(
            f"local burst, {burst['clients']} clients: resets + 5xx",
            burst["resets"] + burst["serverErrors"],
            "failures",
            "0",
            meets["burstResets"] and meets["burstServerErrors"],
        ),
    ]


def one_request_figures(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if "imports" in results:
        rows += _imports(results["imports"])
    if "statements" in results:
        rows += _statements(results["statements"])
    if "attention" in results.get("leads", {}):
        rows += _attention(results["leads"]["attention"])
    if "apiLoad" in results:
        rows += _api_load(results["apiLoad"])
    return rows


def _ingestion(section: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for meta in section["meta"]:
        for channel, run in (("Meta", meta), ("WhatsApp", meta.get("whatsapp"))):
            if run is None:
                continue
            rows.append(
                _figure(
                    f"{channel} leads through the SQS handler, {run['leads']:,}",
                    run["handlerLeadsPerSecond"],
                    "leads/s",
                    f"≥ {run['target']:.0%} of raw single-row INSERTs",
                    run["ratio"] >= run["target"],
                    run["rawLeadsPerSecond"],
                    run["ratio"],
                )
            )
    for run in section["csv"]:
        rows.append(
            _figure(
                f"CSV import, {run['rows']:,} rows",
                run["importRowsPerSecond"],
                "rows/s",
                f"≥ {run['target']:.0%} of raw multi-row INSERTs",
                run["ratio"] >= run["target"],
                run["rawRowsPerSecond"],
                run["ratio"],
            )
        )
        rows.append(
            _figure(
                f"CSV import, {run['rows']:,} rows: peak RSS",
                run["peakRssMb"],
                "MB",
                f"≤ {run['rssTargetMb']} MB",
                run["peakRssMb"] <= run["rssTargetMb"],
            )
        )
    return rows


def _bulk_moves(section: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        _figure(
            f"bulk move, {run['leads']:,} leads",
            run["medianSeconds"],
            "s",
            f"≤ {run['target']}× base (bare UPDATE)",
            run["meetsTarget"],
            run["bareUpdateMedianSeconds"],
            run["ratio"],
        )
        for run in section["runs"]
    ]


def _urgent_flat(flat: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        _figure(
            f"urgent counts p95, {flat['bigOwnerLeadsDue']:,} leads due vs {flat['smallOwnerLeadsDue']:,}",
            flat["bigOwnerP95Ms"],
            "ms",
            f"flat: ≤ {flat['target']}× the small organization's",
            flat["meetsTarget"],
            flat["smallOwnerP95Ms"],
            flat["ratio"],
        )
    ]


def bulk_work_figures(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if "ingestion" in results:
        rows += _ingestion(results["ingestion"])
    if "bulkMove" in results:
        rows += _bulk_moves(results["bulkMove"])
    if "urgentFlat" in results.get("leads", {}).get("attention", {}):
        rows += _urgent_flat(results["leads"]["attention"]["urgentFlat"])
    return rows


def report_lines(rows: list[dict[str, Any]], title: str) -> list[str]:
    lines = [
        "",
        title,
        f"{'figure':<58} {'value':>9} {'base':>8} {'ratio':>6}  {'target':<36} met",
    ]
    for row in rows:
        base = f"{row['baseline']:8.2f}" if "baseline" in row else " " * 8
        ratio = f"{row['ratio']:6.2f}" if "ratio" in row else " " * 6
        met = "yes" if row["meets"] else "NO"
        lines.append(f"{row['figure']:<58} {row['value']:9.2f} {base} {ratio}  {row['target']:<36} {met}")
    return lines
