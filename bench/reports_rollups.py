"""The funnel and the campaign report (issue 23) on the big organization, read from the rollups beside the same
report read from the source rows (the path any period that is not whole local days takes), in the same rounds.

A period the rollups answer is whole local days of the organization; the baseline gets the same period moved by
one second, which the rollups cannot answer, so it walks the status history and the touches as every report
did before migration 0023. Targets (p95): the all-time funnel ≤ 150 ms, attribution over 365 days ≤ 200 ms.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.measure import time_round_robin
from leadcrm.analytics import reports
from leadcrm.analytics.attribution_report import attribution_report
from leadcrm.analytics.rules.reports import DEFAULT_ATTRIBUTION_WINDOW
from leadcrm.directory.rules import Actor
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.periods import Period, period_of

TARGETS_P95_MS = {"funnel, all time": 150.0, "attribution by campaign, 365 days": 200.0}
OFF_THE_DAY = timedelta(seconds=1)


def _funnel(actor: Actor, shifted: bool) -> Callable[[int], None]:
    def call(_: int) -> None:
        with UnitOfWork() as uow:
            timezone = reports.organization_timezone(uow.connection, actor.organization_id)
            period = Period(None, datetime(2100, 1, 1, tzinfo=UTC) + OFF_THE_DAY) if shifted else Period(None, None)
            reports.lead_funnel(uow.connection, actor.organization_id, period, timezone=timezone)
            uow.commit()  # as the route: a report's rollup fold (analytics.rollup_queue) is kept

    return call


def _attribution(actor: Actor, shifted: bool) -> Callable[[int], None]:
    def call(_: int) -> None:
        with UnitOfWork() as uow:
            timezone = reports.organization_timezone(uow.connection, actor.organization_id)
            today = datetime.now(UTC).date()
            days = (today - timedelta(days=364), today)
            period = period_of(*days, timezone)
            if shifted:
                period = Period(period.starts_at + OFF_THE_DAY, period.ends_at)
            attribution_report(
                uow.connection, actor.organization_id, period, days, DEFAULT_ATTRIBUTION_WINDOW, timezone=timezone
            )
            uow.commit()  # as the route: a report's rollup fold (analytics.rollup_queue) is kept

    return call


def measure_reports(owner: Actor, *, requests: int, warmup: int) -> dict[str, Any]:
    calls = {}
    for name, build in (("funnel, all time", _funnel), ("attribution by campaign, 365 days", _attribution)):
        calls[name] = build(owner, False)
        calls[f"{name} (source rows)"] = build(owner, True)
    latencies = time_round_robin(calls, requests=requests, warmup=warmup)
    rows = []
    for name, target in TARGETS_P95_MS.items():
        rollup, source = latencies[name], latencies[f"{name} (source rows)"]
        rows.append(
            {
                "report": name,
                "rollupsP95Ms": round(rollup.p95, 1),
                "sourceRowsP95Ms": round(source.p95, 1),
                "ratio": round(rollup.p95 / source.p95, 2),
                "targetP95Ms": target,
                "meetsTarget": rollup.p95 <= target,
            }
        )
    return {"requests": requests, "reports": rows}


def report_lines(section: dict[str, Any]) -> list[str]:
    lines = ["", "Reports on the big organization: rollups vs the source rows, same rounds (p95 ms)"]
    for row in section["reports"]:
        lines.append(
            f"{row['report']:<40} rollups {row['rollupsP95Ms']:8.1f}  source rows {row['sourceRowsP95Ms']:8.1f}  "
            f"target ≤ {row['targetP95Ms']:.0f}: {'yes' if row['meetsTarget'] else 'NO'}"
        )
    return lines
